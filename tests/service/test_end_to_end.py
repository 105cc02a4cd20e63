"""`kernelgrade serve` as users run it (a child process, real database, real evaluation), driven over HTTP
and with `kernelgrade submit`; and the crash test: SIGKILL mid-job, restart, the job finishes exactly once."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from kernelgrade.problems import find_builtin
from tests.service.servers import ServeProcess, wait_until
from tests.service.sources import CORRECT, slow_correct, slow_incorrect
from tests.storage.databases import BACKENDS, fresh_database_url

CASES = Path(__file__).parents[1] / "cases"
# A pure-Python submission is graded in about 15 s on a 2-core machine; a C++ build takes about 35 s more.
GRADE_S = 180.0
# Over twice the CLI's poll interval (1 s), so that a poll lands inside the stage whatever the request latency.
CORRECTNESS_STAGE_S = 2.5
SETTINGS = {"KERNELGRADE_TIMING_PROFILE": "fast", "KERNELGRADE_LEASE_SECONDS": "6", "KERNELGRADE_POLL_SECONDS": "0.5",
            "KERNELGRADE_COMPILE_JOBS": "2", "KERNELGRADE_SEED_SECRET": "e2e", "KERNELGRADE_MAX_ATTEMPTS": "3"}


@pytest.fixture(params=BACKENDS)
def served(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[ServeProcess]:
    with fresh_database_url(request.param, tmp_path) as url:
        server = ServeProcess(tmp_path, {**SETTINGS, "KERNELGRADE_DATABASE_URL": url})
        try:
            yield server.start()
        finally:
            server.stop()


# What the judge logs when it has prepared the problem the tests submit to (worker/preparations.py).
POSTED = "add_relu_posted"
PREPARED_POSTED = f"prepared {POSTED} on"


def submit(server: ServeProcess, source: str, **fields: object) -> dict[str, Any]:
    response = httpx.post(server.url + "/v1/submissions", json={"problem": "add_relu", "source": source, **fields},
                          timeout=30.0)
    assert response.status_code == 201, response.text
    body: dict[str, Any] = response.json()
    return body


def read(server: ServeProcess, submission_id: int) -> dict[str, Any]:
    body: dict[str, Any] = httpx.get(f"{server.url}/v1/submissions/{submission_id}", timeout=30.0).json()
    return body


def wait_done(server: ServeProcess, submission_id: int) -> dict[str, Any]:
    wait_until(lambda: read(server, submission_id)["evaluation"]["status"] == "done", GRADE_S,
               f"submission {submission_id} to be graded\n{server.log()}", 0.5)
    return read(server, submission_id)


def test_grading_over_http_to_the_leaderboard(served: ServeProcess) -> None:
    workers = httpx.get(served.url + "/v1/workers").json()["workers"]
    assert len(workers) == 1 and workers[0]["device_class"].startswith("cpu") and "cpu" in workers[0]["serves"]
    good = submit(served, CORRECT, model="e2e-model", submitter="tester")
    done = wait_done(served, good["id"])["evaluation"]
    assert done["verdict"] == "correct", done
    assert done["speedup"] > 0 and done["reference_median_ms"] > 0 and done["candidate_median_ms"] > 0
    assert done["attempts"] == 1 and done["device_class"] == workers[0]["device_class"]
    assert done["environment"]["torch"] and done["candidate_timing"]["n"] >= 2
    assert len(done["result"]["trials"]) == 5 and done["progress"]["stage"] == "timing"
    board = httpx.get(served.url + "/v1/leaderboards/add_relu").json()["entries"]
    assert [(e["submitter"], e["model"], e["submission_id"]) for e in board] == [("tester", "e2e-model", good["id"])]
    suite = httpx.get(served.url + "/v1/leaderboards", params={"suite": "cpu"}).json()["entries"]
    assert suite[0]["model"] == "e2e-model" and suite[0]["solved_problems"] == 1

    # Its first trial's forward() takes longer than `submit --wait` polls apart, so the CLI must show that stage:
    # the stages before it can come and go between two polls (a warm judge loads a Python submission at once).
    failing = tmp_file(served, "incorrect.py", slow_incorrect(CORRECTNESS_STAGE_S))
    cli = subprocess.run([str(Path(sys.executable).parent / "kernelgrade"), "submit", str(failing), "--problem",
                          "add_relu", "--server", served.url, "--wait", "--model", "bad"],
                         capture_output=True, text=True, timeout=GRADE_S, env=served.env, check=False)
    assert cli.returncode == 1, cli.stdout + cli.stderr
    assert "verdict     INCORRECT" in cli.stdout and "[correctness/" in cli.stdout
    assert "[queued] waiting for a judge" in cli.stderr and "[correctness] checking correctness" in cli.stderr
    board = httpx.get(served.url + "/v1/leaderboards/add_relu").json()["entries"]
    assert [e["model"] for e in board] == ["e2e-model"]
    shapes = httpx.get(served.url + "/v1/problems/add_relu").json()["input_shapes"]
    assert shapes == ["float32[1024, 1024]", "float32[1024, 1024]"]  # found by the pool on the meta device
    # The whole log: its tail (log()) loses the startup lines when slow grading means many polls.
    assert "open mode: requests without an API key act as the local admin" in served.log_path.read_text()


def tmp_file(server: ServeProcess, name: str, text: str) -> Path:
    path = server.data_dir / name
    path.write_text(text)
    return path


@pytest.fixture
def unsandboxed(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[ServeProcess]:
    """No sandbox, so that the submission can log its forward() calls to a file the test reads."""
    with fresh_database_url(request.param, tmp_path) as url:
        server = ServeProcess(tmp_path, {**SETTINGS, "KERNELGRADE_DATABASE_URL": url, "KERNELGRADE_SANDBOX": "none",
                                                "KERNELGRADE_ALLOW_UNSANDBOXED": "1"})
        try:
            yield server.start()
        finally:
            server.stop()


@pytest.mark.parametrize("unsandboxed", BACKENDS, indirect=True)
def test_a_job_interrupted_by_sigkill_finishes_once_after_restart(unsandboxed: ServeProcess) -> None:
    served = unsandboxed
    calls = served.data_dir / "forward-calls.log"
    job = submit(served, slow_correct(str(calls), 0.7), model="slow")
    wait_until(lambda: calls.exists() and read(served, job["id"])["evaluation"]["status"] == "running", GRADE_S,
               f"the slow job to be running\n{served.log()}", 0.2)
    served.kill()
    interrupted = set(calls.read_text().split())
    assert len(interrupted) == 1  # one run child so far

    served.start()
    done = wait_done(served, job["id"])["evaluation"]
    assert done["verdict"] == "correct" and done["attempts"] == 2, done
    assert "lease expired" in (done["last_error"] or ""), done
    assert "took over 1 job(s)" in served.whole_log()
    runs = set(calls.read_text().split())
    assert len(runs) == 2 and interrupted < runs  # graded once more, by one new run child
    finished_at, lines = done["finished_at"], len(calls.read_text().split())
    time.sleep(3 * float(SETTINGS["KERNELGRADE_POLL_SECONDS"]) + 1.0)  # several idle claims of the judge
    after = read(served, job["id"])["evaluation"]
    assert (after["finished_at"], after["attempts"]) == (finished_at, 2)
    assert len(calls.read_text().split()) == lines  # nothing ran it again
    listed = httpx.get(served.url + "/v1/submissions").json()["items"]
    assert [item["id"] for item in listed] == [job["id"]]


def test_a_problem_prepared_while_idle_is_not_prepared_again_after_a_restart(tmp_path: Path) -> None:
    """The judge prepares the catalogue's problems while it has nothing to grade; the evaluations after that,
    before and after a restart, compute none of their trials, and the restarted judge prepares nothing again."""
    with fresh_database_url("sqlite", tmp_path) as url:
        server = ServeProcess(tmp_path, {**SETTINGS, "KERNELGRADE_DATABASE_URL": url}).start()
        try:
            # Posted after the built-in problems, it is the newest: the idle judge prepares it next, rather than
            # after the ten CPU problems of the catalogue (most of a minute here).
            add_relu = find_builtin("add_relu")
            assert add_relu is not None
            posted = httpx.post(server.url + "/v1/problems", json={"name": POSTED, "source": add_relu.source})
            assert posted.status_code == 201, posted.text
            wait_until(lambda: PREPARED_POSTED in server.whole_log(), GRADE_S,
                       f"the idle judge to prepare {POSTED}\n{server.log()}", 0.5)
            first = wait_done(server, submit(server, CORRECT, problem=POSTED)["id"])["evaluation"]
            server.stop()
            restarted_at = len(server.whole_log())
            server.start()
            another = CORRECT + "\n# the same kernel, submitted again after the restart\n"
            second = wait_done(server, submit(server, another, problem=POSTED)["id"])["evaluation"]
            after_restart = server.whole_log()[restarted_at:]
        finally:
            server.stop()
    assert first["verdict"] == second["verdict"] == "correct", (first, second)
    # Three public trials and two of the secret pool's eight seeds: all of them prepared, none computed.
    for evaluation in (first, second):
        found = prepared(evaluation)
        assert found["computed"] == 0 and found["stored"] + found["kept"] == 5, evaluation["result"]["extra"]
    assert PREPARED_POSTED not in after_restart


def prepared(evaluation: dict[str, Any]) -> dict[str, int]:
    extra = dict(evaluation["result"]["extra"])
    return {source: int(extra[f"trials_{source}"]) for source in ("computed", "stored", "kept")}


@pytest.mark.slow
def test_a_cpp_extension_is_compiled_ahead_and_graded(tmp_path: Path) -> None:
    with fresh_database_url("sqlite", tmp_path) as url:
        server = ServeProcess(tmp_path, {**SETTINGS, "KERNELGRADE_DATABASE_URL": url}).start()
        try:
            slow = submit(server, slow_correct("/dev/null", 0.5))
            cpp = submit(server, (CASES / "cpu_correct" / "submission.py").read_text(), model="cpp")
            done = wait_done(server, cpp["id"])["evaluation"]
            assert wait_done(server, slow["id"])["evaluation"]["verdict"] == "correct"
        finally:
            server.stop()
    assert done["verdict"] == "correct" and done["speedup"] > 0, done
    # The compile-ahead thread built it while the judge graded the slow job; the judge found it cached.
    assert done["result"]["compile_cache_hit"] is True, server.log()
    assert f"compile-ahead: evaluation {cpp['evaluation']['id']} built" in server.whole_log()
