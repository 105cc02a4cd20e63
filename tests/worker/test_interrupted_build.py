"""A server killed in the middle of a C++ build: after the restart, the retried job builds again and is graded
in about one build's time, instead of waiting on what the killed build left until the compile limit."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from kernelgrade.evaluator.wire import build_lock
from kernelgrade.worker.grading_request import FAST_LIMITS
from tests.service.servers import ServeProcess, wait_until
from tests.service.test_end_to_end import SETTINGS, submit, wait_done
from tests.storage.databases import fresh_database_url

CPP_SOURCE = (Path(__file__).parents[1] / "cases" / "cpu_correct" / "submission.py").read_text()
# Until the build holds its lock: the server starts its judge, which starts a sandboxed compile child that
# imports torch; far less on an idle machine.
BUILD_STARTS_S = 180.0
# A sandbox dies with the server that started it (bwrap --die-with-parent, unshare --kill-child) within moments.
SANDBOX_DIES_S = 10.0


def build_locks(data_dir: Path) -> list[Path]:
    """torch's lock files in the server's compile cache: one per extension being built."""
    return list((data_dir / "cache").glob("builds/*/ext/*/lock"))


@pytest.mark.slow
def test_a_build_interrupted_by_sigkill_is_built_again_after_restart(tmp_path: Path) -> None:
    with fresh_database_url("sqlite", tmp_path) as url:
        # No precompiled header: building one would add a second build's time, and nothing here is about it.
        server = ServeProcess(tmp_path, {**SETTINGS, "KERNELGRADE_DATABASE_URL": url,
                                         "KERNELGRADE_PRECOMPILED_HEADERS": "0"}).start()
        try:
            job = submit(server, CPP_SOURCE, model="cpp")
            wait_until(lambda: bool(build_locks(tmp_path)), BUILD_STARTS_S, f"the build to start\n{server.log()}")
            server.kill()
            [left] = build_locks(tmp_path)
            wait_until(lambda: not build_lock.held(left), SANDBOX_DIES_S, "the killed server's build to die")
            assert left.exists()  # torch's lock of the killed build, which nobody will ever remove

            restarted = time.monotonic()
            server.start()
            done = wait_done(server, job["id"])["evaluation"]
            graded_in = time.monotonic() - restarted
        finally:
            server.stop()
    assert done["verdict"] == "correct", done
    # The old failure: the build waited on the lock until the compile limit, and the job ended `timeout`.
    assert graded_in < FAST_LIMITS.compile_s, f"{graded_in:.0f} s\n{server.log()}"
    assert not build_locks(tmp_path)
