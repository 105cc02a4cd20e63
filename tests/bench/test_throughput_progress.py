"""bench/throughput.py's progress lines say where each verdict's time went, so that a run cut short (a device
call's limit) still explains itself."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"


def _body(verdict: str, findings: list[dict[str, str]]) -> dict[str, object]:
    stages = [["load", 0.5], ["compiled_baseline", 26.0], ["timing:candidate", 2.0], ["correctness:call", 1.0]]
    return {"id": 7, "problem": "2_ConvTranspose2d", "model": "reference", "evaluation": {
        "verdict": verdict, "started_at": "2026-11-27T20:00:00+00:00", "finished_at": "2026-11-27T20:00:31+00:00",
        "findings": findings, "result": {"stage_seconds": stages}}}


def test_a_verdict_s_line_names_its_problem_its_time_and_its_largest_stages(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(BENCH))
    service = importlib.import_module("throughput_service")
    assert service._progress(_body("correct", [])) == (
        "correct 2_ConvTranspose2d (31.0 s in the judge: compiled_baseline 26.0, timing:candidate 2.0,"
        " correctness:call 1.0)")
    flag = {"code": "timing_inconsistent", "severity": "flag", "message": "time missing"}
    assert service._progress(_body("flagged", [flag])).endswith(
        "correctness:call 1.0) (submission 7, reference): timing_inconsistent: time missing")
