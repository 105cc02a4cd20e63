"""What the API and the pages show of a stored result: each part read from the evaluator's JSON by one parse
at the HTTP edge, equal to what the evaluator said; who sees the failure's detail; rows written by earlier
code; a row that does not read."""

from __future__ import annotations

import dataclasses
import json
import logging
import re
from pathlib import Path
from typing import Any

import httpx
import pytest
from pydantic import BaseModel

from kernelgrade.evaluator import (
    CompiledBaseline,
    EvalResult,
    Failure,
    Finding,
    TimingMethod,
    TimingStats,
    TrialResult,
    Verdict,
)
from kernelgrade.sandbox_policy import UNSANDBOXED_WARNING
from kernelgrade.service.schemas import FailureOut, FindingOut, TimingOut
from kernelgrade.service.stored_result import StoredBaseline, StoredMethod, StoredResult, StoredTiming, StoredTrial
from kernelgrade.storage.database import Database
from kernelgrade.storage.jobs import Lease, claim_next, finish_job
from kernelgrade.storage.records import JobOutcome
from tests.service.conftest import ApiFactory
from tests.service.keys import make_key
from tests.service.results import full_result, record
from tests.service.sources import CORRECT, variant

BESIDE = "before and after the candidate, same device, same process layout"

# A full result as EvalResult.to_json_dict() wrote it (tests/service/results.py's full_result()) when the API
# began reading results through StoredResult. Databases hold rows like it; they must keep reading.
STORED = Path(__file__).with_name("stored_result.json")


def _submit(api: httpx.Client, source: str = CORRECT, key: str | None = None) -> int:
    response = api.post("/v1/submissions", json={"problem": "add_relu", "source": source},
                        headers={"X-API-Key": key} if key else {})
    assert response.status_code == 201, response.text
    submission_id: int = response.json()["id"]
    return submission_id


def _evaluation(api: httpx.Client, submission_id: int, key: str | None = None) -> dict[str, Any]:
    response = api.get(f"/v1/submissions/{submission_id}", headers={"X-API-Key": key} if key else {})
    assert response.status_code == 200, response.text
    evaluation: dict[str, Any] = response.json()["evaluation"]
    return evaluation


def _public(value: Any, drop: tuple[str, ...] = ()) -> dict[str, Any]:
    """An evaluator dataclass as the API shows it: its JSON, less the fields the API leaves out."""
    shown: dict[str, Any] = json.loads(json.dumps(dataclasses.asdict(value)))
    return {name: shown[name] for name in shown if name not in drop}


def test_every_part_of_a_recorded_result_reaches_the_api_as_the_evaluator_said_it(api: httpx.Client,
                                                                                   database: Database) -> None:
    submission_id = _submit(api)
    result = full_result()
    record(database, result)
    evaluation = _evaluation(api, submission_id)
    assert result.reference_timing and result.candidate_timing and result.failure
    assert evaluation["reference_timing"] == _public(result.reference_timing, drop=("samples_ms",))
    assert evaluation["candidate_timing"] == _public(result.candidate_timing, drop=("samples_ms",))
    assert evaluation["failure"] == _public(result.failure)
    assert evaluation["findings"] == [_public(f) for f in result.findings]
    assert evaluation["timing_method"] == "perf_counter_ns; 64 MiB cache flush per rep; strict fp32"
    assert evaluation["reference_timed"] == BESIDE  # as results stored before stored timings say
    assert evaluation["compiled_baseline"] == {"status": "measured", "median_ms": 2.5,
                                               "backend": "inductor (mode default)",
                                               "measured_at": "2026-11-20T10:00:00Z", "reused": True, "message": ""}
    assert evaluation["environment"] == {"device_name": "Test CPU", "driver": None, "torch": "2.x", "cuda": None,
                                         "sandbox": "bwrap", "host": "test-host", "warning": None}
    assert (evaluation["verdict"], evaluation["speedup"], evaluation["speedup_vs_compiled"]) == ("flagged", 2.0, 1.25)
    assert evaluation["result"] == json.loads(json.dumps(result.to_json_dict()))


def test_others_see_every_part_but_the_failures_detail_and_the_full_result(api_factory: ApiFactory,
                                                                          database: Database) -> None:
    alice, bob = make_key(database, "alice"), make_key(database, "bob")
    api = api_factory(open_mode="off")
    submission_id = _submit(api, key=alice)
    record(database, full_result())
    owner, other = _evaluation(api, submission_id, alice), _evaluation(api, submission_id, bob)
    assert "secret_line()" in owner["failure"]["detail"] and other["failure"]["detail"] == ""
    assert owner["result"] is not None and other["result"] is None
    assert {**owner, "failure": None, "result": None} == {**other, "failure": None, "result": None}
    assert {**owner["failure"], "detail": ""} == other["failure"]


def test_an_unsandboxed_result_carries_the_warning(api: httpx.Client, database: Database) -> None:
    submission_id = _submit(api)
    record(database, full_result(Verdict.CORRECT, sandbox="none"))
    assert _evaluation(api, submission_id)["environment"]["warning"] == UNSANDBOXED_WARNING


def _finish_with(database: Database, blob: dict[str, Any]) -> None:
    """Record a stored result as it is, with the columns a judge writes beside it."""
    outcome = JobOutcome(verdict="flagged", result=blob, speedup=2.0, reference_median_ms=3.0,
                         candidate_median_ms=1.5, error_code="outputs_precomputed", error_summary="precomputed",
                         environment=None)
    with database.session() as session:
        job = claim_next(session, Lease("judge", 60), {"cpu": "cpu-test"}, 3)
        assert job is not None
        assert finish_job(session, job.evaluation_id, "judge", outcome)


def test_the_speedup_comes_with_its_interval_from_the_two_medians_intervals(api: httpx.Client,
                                                                            database: Database) -> None:
    submission_id = _submit(api)
    _finish_with(database, json.loads(STORED.read_text()))
    evaluation = _evaluation(api, submission_id)
    reference, candidate = evaluation["reference_timing"], evaluation["candidate_timing"]
    assert evaluation["speedup_interval"] == {
        "low": pytest.approx(reference["ci95_low_ms"] / candidate["ci95_high_ms"]),
        "high": pytest.approx(reference["ci95_high_ms"] / candidate["ci95_low_ms"])}
    assert evaluation["speedup_interval"]["low"] < evaluation["speedup"] < evaluation["speedup_interval"]["high"]


def test_a_row_stored_by_earlier_code_still_reads(api: httpx.Client, database: Database) -> None:
    stored = json.loads(STORED.read_text())
    assert EvalResult.from_json_dict(stored) == full_result()  # the worker's side reads it too
    submission_id = _submit(api)
    _finish_with(database, stored)
    evaluation = _evaluation(api, submission_id)
    assert evaluation["reference_timing"]["median_ms"] == 3.0 and evaluation["candidate_timing"]["n"] == 3
    assert evaluation["failure"]["code"] == "outputs_precomputed" and evaluation["failure"]["line"] == 7
    assert [f["severity"] for f in evaluation["findings"]] == ["flag", "review"]
    assert evaluation["timing_method"] == "perf_counter_ns; 64 MiB cache flush per rep; strict fp32"
    assert evaluation["compiled_baseline"]["median_ms"] == 2.5 and evaluation["compiled_baseline"]["reused"] is True
    page = api.get(f"/submissions/{submission_id}").text
    assert f"The reference: {BESIDE}." in page
    assert len(re.findall(r'<circle class="point reference"', page)) == 4
    assert len(re.findall(r'<circle class="point candidate"', page)) == 3
    assert page.count('<span class="badge incorrect">fail</span>') == 1 and "values differ" in page


def test_a_row_that_does_not_read_shows_its_columns_and_is_logged(api: httpx.Client, database: Database,
                                                                  caplog: pytest.LogCaptureFixture) -> None:
    submission_id = _submit(api, variant(1))
    _finish_with(database, {"verdict": "flagged", "reference_timing": {"n": "many"}})
    with caplog.at_level(logging.WARNING, logger="kernelgrade.service.stored_result"):
        evaluation = _evaluation(api, submission_id)
    assert (evaluation["verdict"], evaluation["speedup"], evaluation["reference_median_ms"]) == ("flagged", 2.0, 3.0)
    assert evaluation["reference_timing"] is None and evaluation["findings"] == []
    assert (evaluation["failure"]["code"], evaluation["failure"]["message"]) == ("outputs_precomputed", "precomputed")
    assert "does not read as the evaluator's result" in caplog.text
    assert api.get(f"/submissions/{submission_id}").status_code == 200


@pytest.mark.parametrize(("model", "evaluator_type"), [
    (StoredResult, EvalResult), (TimingOut, TimingStats), (StoredTiming, TimingStats), (FailureOut, Failure),
    (FindingOut, Finding), (StoredTrial, TrialResult), (StoredMethod, TimingMethod),
    (StoredBaseline, CompiledBaseline)])
def test_the_edge_reads_only_fields_the_evaluator_writes(model: type[BaseModel], evaluator_type: type) -> None:
    """A field renamed in the evaluator would otherwise read as its default here, silently."""
    assert set(model.model_fields) <= {f.name for f in dataclasses.fields(evaluator_type)}
