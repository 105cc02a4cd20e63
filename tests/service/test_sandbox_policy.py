"""No submission runs unsandboxed by accident: `serve` refuses sandbox none without the explicit opt-out and
says what to install or set; with the opt-out, the log, the API and the pages say it ran with no sandbox."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from kernelgrade.config import Settings
from kernelgrade.evaluator.sandbox.levels import SandboxUnavailable
from kernelgrade.storage.database import Database
from kernelgrade.storage.submissions import get_submission
from kernelgrade.worker.pool import WorkerPool
from kernelgrade.worker.sandboxing import settings_launcher
from tests.service.conftest import base_settings
from tests.service.sources import CORRECT
from tests.storage.builders import grade

# The refusal comes before the database or the HTTP server is touched: a few seconds of Python start-up,
# with room for a loaded CI host.
REFUSAL_S = 120


def _serve(tmp_path: Path, **settings: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("KERNELGRADE_")}
    env.update({"KERNELGRADE_DATA_DIR": str(tmp_path), "KERNELGRADE_PORT": "1", **settings})
    return subprocess.run([sys.executable, "-m", "kernelgrade.cli", "serve"], capture_output=True, text=True,
                          env=env, timeout=REFUSAL_S, check=False)


def test_serve_refuses_sandbox_none_without_the_opt_out(tmp_path: Path) -> None:
    done = _serve(tmp_path, KERNELGRADE_SANDBOX="none")
    output = done.stdout + done.stderr
    assert done.returncode == 2, output
    assert "refusing to start the worker pool" in output
    assert "apt-get install bubblewrap" in output and "KERNELGRADE_ALLOW_UNSANDBOXED=1" in output
    assert not (tmp_path / "kernelgrade.db").exists(), "serve went on to open its database"


def test_the_policy_names_the_opt_out_and_honours_it(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path, sandbox="none")
    with pytest.raises(SandboxUnavailable, match="KERNELGRADE_SANDBOX=none KERNELGRADE_ALLOW_UNSANDBOXED=1"):
        settings_launcher(settings)
    assert settings_launcher(settings.replace(allow_unsandboxed=True)).level == "none"
    assert Settings.from_env({"KERNELGRADE_ALLOW_UNSANDBOXED": "1"}).allow_unsandboxed is True
    assert Settings.from_env({}).allow_unsandboxed is False


def test_an_unsandboxed_pool_warns_when_it_starts(database: Database, database_url: str, tmp_path: Path,
                                                  caplog: pytest.LogCaptureFixture) -> None:
    settings = base_settings(tmp_path, database_url, local_judges=-1, sandbox="none", allow_unsandboxed=True)
    with caplog.at_level(logging.INFO, logger="kernelgrade.worker.pool"):
        pool = WorkerPool.start(settings, database, polling=False)
    pool.stop()
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING and "NO SANDBOX" in r.getMessage()]
    assert warnings, [r.getMessage() for r in caplog.records]


def test_an_unsandboxed_result_says_so_in_the_api_and_on_its_page(api: httpx.Client, database: Database) -> None:
    created = api.post("/v1/submissions", json={"problem": "add_relu", "source": CORRECT})
    submission_id = created.json()["id"]
    with database.session() as session:
        view = get_submission(session, submission_id)
    assert view is not None
    grade(database, view, "correct", 1.5)  # recorded with sandbox "none", as an opted-out judge records it
    environment = api.get(f"/v1/submissions/{submission_id}").json()["evaluation"]["environment"]
    assert environment["sandbox"] == "none" and "UNSANDBOXED" in environment["warning"]
    assert 'id="unsandboxed"' in api.get(f"/submissions/{submission_id}").text
