"""bench/throughput.py's report carries the messages of findings that explain what a verdict cost: a stream's
table counts a second attempt, and only its message says where the first one ran out of memory."""

from __future__ import annotations

import importlib
from pathlib import Path
from types import ModuleType

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"
STAMP = "2026-11-27T20:00:00+00:00"
SECOND = {"code": "graded_again_after_out_of_memory", "severity": "info",
          "message": "the run child ran out of device memory in timing; graded again with nothing kept"}
REVIEW = {"code": "static_torch_ops", "severity": "review", "message": "calls torch ops"}


def _modules(monkeypatch: pytest.MonkeyPatch) -> tuple[ModuleType, ModuleType, ModuleType]:
    monkeypatch.syspath_prepend(str(BENCH))
    return (importlib.import_module("throughput_service"), importlib.import_module("throughput_report"),
            importlib.import_module("throughput_corpus"))


def _body(identifier: int, findings: list[dict[str, str]]) -> dict[str, object]:
    return {"id": identifier, "evaluation": {
        "verdict": "correct", "created_at": STAMP, "started_at": STAMP, "finished_at": "2026-11-27T20:00:09+00:00",
        "findings": findings, "result": {"stage_seconds": [["load", 1.0]], "wall_s": 9.0}}}


def test_a_second_attempt_s_message_is_reported_and_other_findings_are_not(monkeypatch: pytest.MonkeyPatch) -> None:
    service, report, corpus = _modules(monkeypatch)
    problem = corpus.ProblemRef("2_convtranspose2d", "", builtin=False)
    submission = corpus.Submission(0, "reference:2_convtranspose2d", corpus.Expect.CORRECT, problem, "", "")
    graded = [service.graded(submission, _body(7, [SECOND, REVIEW])), service.graded(submission, _body(8, [REVIEW]))]
    assert graded[0].notes == (f"graded_again_after_out_of_memory: {SECOND['message']}",) and graded[1].notes == ()
    summary = report.summarize(service.Config("defaults", {}), graded, 1, None)
    assert summary.notes == [f"submission 7 (reference:2_convtranspose2d): {graded[0].notes[0]}"]
