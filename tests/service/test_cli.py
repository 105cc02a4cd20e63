"""The server-side commands, run through the real argument parser against real databases."""

from __future__ import annotations

import argparse
import json
import threading
from pathlib import Path

import httpx
import pytest

from kernelgrade.cli import main
from kernelgrade.cli.service_commands import add_import_arguments
from kernelgrade.service.key_material import key_prefix, matches
from kernelgrade.storage.api_keys import key_by_prefix
from kernelgrade.storage.database import Database
from kernelgrade.storage.jobs import Lease, claim_next, finish_job, record_progress
from kernelgrade.storage.migrate import head_revision
from kernelgrade.storage.problems import latest_problem, list_latest_problems
from kernelgrade.storage.records import ClaimedJob, JobStatus, ProgressUpdate
from kernelgrade.worker.job_outcome import outcome_from_result
from tests.service.conftest import ApiFactory
from tests.service.results import full_result
from tests.service.servers import wait_until
from tests.service.sources import CORRECT, variant

PROBLEM = '''import torch
import torch.nn as nn

KERNELGRADE = {"device": "cpu", "tags": ["t"]}


class Model(nn.Module):
    def forward(self, x):
        return x + {n}


def get_inputs():
    return [torch.randn(8)]


def get_init_inputs():
    return []
'''


@pytest.fixture
def env(database_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("KERNELGRADE_DATABASE_URL", database_url)
    monkeypatch.setenv("KERNELGRADE_DATA_DIR", str(tmp_path))
    return database_url


def test_db_upgrade_and_keys(env: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["db", "upgrade"]) == 0
    assert f"revision {head_revision()}" in capsys.readouterr().out
    assert main(["keys", "create", "--name", "ci", "--role", "admin", "--quota", "7"]) == 0
    created = capsys.readouterr()
    key = created.out.strip()
    assert key.startswith("kg_") and "\n" not in key and "shown only this once" in created.err
    database = Database.connect(env)
    with database.session() as session:
        record = key_by_prefix(session, key_prefix(key))
    database.dispose()
    assert record is not None and matches(key, record.key_hash) and key not in record.key_hash
    assert record.role.value == "admin" and record.quota_per_day == 7
    assert main(["keys", "create", "--name", "ci"]) == 2
    assert main(["keys", "list"]) == 0
    assert "ci" in capsys.readouterr().out
    assert main(["keys", "revoke", "ci"]) == 0 and main(["keys", "revoke", "ci"]) == 2


def _import(folder: Path) -> int:
    parser = argparse.ArgumentParser()
    add_import_arguments(parser)
    args = parser.parse_args([str(folder)])
    code: int = args.handler(args)
    return code


def test_problems_import_is_idempotent_on_content(env: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = tmp_path / "MyBench" / "level1"
    folder.mkdir(parents=True)
    (folder / "1_Add_One.py").write_text(PROBLEM.replace("{n}", "1"))
    (folder / "2_Add_Two.py").write_text(PROBLEM.replace("{n}", "2"))
    (folder / "3_Broken.py").write_text("x = 1\n")
    assert _import(tmp_path / "MyBench") == 1  # one file is not a problem
    assert "added 2, new versions 0, unchanged 0, errors 1" in capsys.readouterr().out
    assert _import(tmp_path / "MyBench") == 1
    assert "added 0, new versions 0, unchanged 2" in capsys.readouterr().out
    (folder / "3_Broken.py").unlink()
    (folder / "2_Add_Two.py").write_text(PROBLEM.replace("{n}", "2.5"))
    assert _import(tmp_path / "MyBench") == 0
    assert "added 0, new versions 1, unchanged 1" in capsys.readouterr().out
    database = Database.connect(env)
    with database.session() as session:
        names = sorted(p.name for p in list_latest_problems(session, "mybench"))
        two = latest_problem(session, "2_add_two")
    database.dispose()
    assert names == ["1_add_one", "2_add_two"]
    assert two is not None and "2.5" in two.source and two.level == 1
    assert _import(tmp_path / "missing") == 2


@pytest.mark.parametrize("command", [
    ["serve"],
    ["worker"],
    ["eval", "add_relu", "submission.py"],
    ["submit", "submission.py", "--problem", "add_relu"],
    ["db", "upgrade"],
])
def test_a_bad_setting_stops_the_command_with_what_is_accepted(command: list[str], tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("KERNELGRADE_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("KERNELGRADE_TIMING_PROFILE", "quick")
    monkeypatch.setenv("KERNELGRADE_OPEN_MODE", "sometimes")
    (tmp_path / "submission.py").write_text("class ModelNew: ...\n")
    monkeypatch.chdir(tmp_path)
    assert main(command) == 2
    assert capsys.readouterr().err == ("error: KERNELGRADE_OPEN_MODE='sometimes': use auto, on or off"
                                       " (also 1, true, yes / 0, false, no);"
                                       " KERNELGRADE_TIMING_PROFILE='quick': use standard or fast\n")
    assert not (tmp_path / "kernelgrade.db").exists(), "the command went on to open its database"


# Over the CLI's poll interval (1 s), so that a poll lands while the job shows its correctness stage.
STAGE_SHOWN_S = 2.5


def _judge_one(database: Database, ran: list[ClaimedJob]) -> None:
    """What a judge writes for the next queued job: its correctness stage, a while later its result."""
    claimed: list[ClaimedJob] = []

    def claim() -> bool:
        with database.session() as session:
            job = claim_next(session, Lease("judge", 60), {"cpu": "cpu-test"}, 3)
        claimed.extend([job] if job is not None else [])
        return job is not None

    wait_until(claim, 30.0, "the submission to be queued", 0.1)
    job = claimed[0]
    with database.session() as session:
        update = ProgressUpdate("correctness", "checking correctness", 2, 5)
        record_progress(session, job.evaluation_id, "judge", JobStatus.RUNNING, update)
    threading.Event().wait(STAGE_SHOWN_S)
    with database.session() as session:
        finish_job(session, job.evaluation_id, "judge", outcome_from_result(full_result()))
    ran.append(job)


def test_submit_follows_the_grading_and_prints_the_verdict(api_factory: ApiFactory, database: Database,
                                                           tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("KERNELGRADE_DATA_DIR", str(tmp_path))
    server = str(api_factory().base_url)
    kernel = tmp_path / "kernel.py"
    kernel.write_text(CORRECT)
    ran: list[ClaimedJob] = []
    judge = threading.Thread(target=_judge_one, args=(database, ran))
    judge.start()
    assert main(["submit", str(kernel), "--problem", "add_relu", "--server", server, "--wait"]) == 1  # flagged
    judge.join()
    out, err = capsys.readouterr()
    assert len(ran) == 1 and f"submission {ran[0].submission_id} for add_relu" in err
    assert "[queued] waiting for a judge" in err and "[correctness] checking correctness 2/5" in err
    assert out.splitlines()[:3] == ["verdict     FLAGGED", "speedup     2.000x (reference 3.0000 ms, candidate"
                                    " 1.5000 ms)", "reason      [timing/outputs_precomputed] the outputs were"
                                    " ready before the timed call"]
    kernel.write_text(variant(1))
    assert main(["submit", str(kernel), "--problem", "add_relu", "--server", server, "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)  # the POST's answer: no source, and its warnings
    read = httpx.get(f"{server}/v1/submissions/{printed['id']}").json()
    assert printed["source"] is None and any("no worker for device 'cpu'" in w for w in printed["warnings"])
    assert {**printed, "source": None, "warnings": []} == {**read, "source": None, "warnings": []}
    assert printed["evaluation"]["status"] == "queued"
