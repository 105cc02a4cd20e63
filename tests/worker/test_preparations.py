"""A judge with nothing to grade prepares the catalogue's problems, newest first and each once per process;
the evaluation that comes after computes no trial, and a restarted judge finds the preparation on disk."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from kernelgrade.config import Settings
from kernelgrade.evaluator import Preparation, SubprocessLauncher
from kernelgrade.storage.database import Database
from kernelgrade.storage.submissions import get_submission
from kernelgrade.worker import grader as grader_module
from kernelgrade.worker.judge import GradeOutcome, Judge
from kernelgrade.worker.judges import JudgeSlot
from tests.service.conftest import base_settings, builtin_problem
from tests.storage.builders import add_submission

SLOT = JudgeSlot("cpu0", "cpu", 0, "cpu-test", "cpu", (("cpu", "cpu-test"),))
# The reference itself: graded without a build, so that the test is about the trials alone.
PLAIN_TORCH = """
import torch
class ModelNew(torch.nn.Module):
    def forward(self, a, b):
        return torch.relu(a + b)
"""


def _judge(settings: Settings, database: Database) -> Judge:
    return Judge(SLOT, "test-judge", settings, database, SubprocessLauncher(), threading.Event(), threading.Event())


def _recording(monkeypatch: pytest.MonkeyPatch) -> list[Preparation]:
    done: list[Preparation] = []
    real = grader_module.prepare

    def prepare(*args: object) -> Preparation:
        done.append(real(*args))  # type: ignore[arg-type]
        return done[-1]

    monkeypatch.setattr(grader_module, "prepare", prepare)
    return done


def test_an_idle_judge_prepares_each_problem_once_and_the_evaluation_after_computes_no_trial(
        database: Database, database_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    older, newer = builtin_problem(database, "matmul_small"), builtin_problem(database, "add_relu")
    settings = base_settings(tmp_path, database_url)
    done = _recording(monkeypatch)
    judge = _judge(settings, database)
    try:
        assert judge.prepare_a_problem() and judge.prepare_a_problem()
        assert not judge.prepare_a_problem()  # each looked at once
        assert [(d.problem, d.finished, d.computed > 0) for d in done] == [
            (newer.name, True, True), (older.name, True, True)]
        view = add_submission(database, newer, PLAIN_TORCH)
        assert view.evaluation is not None
        assert judge.grade_delivered(view.evaluation.id) is GradeOutcome.GRADED
    finally:
        judge.close()
    with database.session() as session:
        graded = get_submission(session, view.submission.id)
    assert graded is not None and graded.evaluation is not None and graded.evaluation.result is not None
    assert graded.evaluation.verdict == "correct"
    extra = dict(graded.evaluation.result["extra"])
    assert extra["trials_computed"] == "0" and int(extra["trials_kept"]) + int(extra["trials_stored"]) >= 3


def test_a_restarted_judge_finds_its_problems_prepared_and_a_judge_told_not_to_prepares_none(
        database: Database, database_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    builtin_problem(database, "add_relu")
    settings = base_settings(tmp_path, database_url)
    done = _recording(monkeypatch)
    for _ in range(2):
        judge = _judge(settings, database)
        try:
            assert judge.prepare_a_problem()
        finally:
            judge.close()
    assert [(d.computed > 0, d.note) for d in done] == [(True, ""), (False, "prepared before")]
    judge = _judge(settings.replace(prepare_problems=False), database)
    try:
        assert not judge.prepare_a_problem()
    finally:
        judge.close()
