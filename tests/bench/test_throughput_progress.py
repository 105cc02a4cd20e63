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


def test_the_judges_work_off_the_verdicts_path_is_read_from_the_server_log_once_each_line_is_whole(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.syspath_prepend(str(BENCH))
    service_module = importlib.import_module("throughput_service")
    log = tmp_path / "serve.log"
    service = service_module.Service("http://127.0.0.1:9", None, log)
    assert service.off_path_work() == []  # no log yet
    log.write_text(
        "2026-11-30 23:54:20,001 INFO kernelgrade.worker.judge: judge cuda0: evaluation 3 (2_Conv), attempt 1\n"
        "2026-11-30 23:54:21,002 INFO kernelgrade.worker.judge: judge cuda0: measuring torch.compile of 2_Conv on"
        " cuda-h200, which graded evaluations wait for\n"
        "2026-11-30 23:54:39,017 INFO kernelgrade.worker.preparations: judge cuda0 prepared 1_Add on cuda-h200: 13")
    assert service.off_path_work() == [
        "judge cuda0: measuring torch.compile of 2_Conv on cuda-h200, which graded evaluations wait for"]
    with log.open("a") as more:
        more.write(" trial(s), in 6.7 s\n2026-11-30 23:54:50,000 INFO uvicorn.access: GET /v1/health 200\n"
                   "2026-11-30 23:54:51,000 INFO kernelgrade.worker.compiled_baselines: torch.compile of 2_Conv on"
                   " cuda-h200: measured; filled in 1 evaluation(s)\n")
    assert service.off_path_work() == ["judge cuda0 prepared 1_Add on cuda-h200: 13 trial(s), in 6.7 s",
                                       "torch.compile of 2_Conv on cuda-h200: measured; filled in 1 evaluation(s)"]
    assert service.off_path_work() == []


def test_the_checks_count_calls_whose_float64_oracle_ran_on_the_host(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(BENCH))
    service = importlib.import_module("throughput_service")
    on_host = {"extra": [["trials_computed", "7"], ["oracle_on_host_recheck", "3"]]}
    assert ("float64 oracle run on the host (calls)", "recheck 3") in service._checks({}, on_host)
    on_device = {"extra": [["trials_computed", "7"]]}
    assert not any(check.startswith("float64") for check, _ in service._checks({}, on_device))
