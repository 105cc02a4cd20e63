"""What the pages compute beside the plots: speedup intervals, baselines, verdict words, error excerpts, the
trials' errors and the timing's stop reasons."""

from __future__ import annotations

from typing import get_args

import pytest

from kernelgrade.service.pages.explanations import VERDICTS, explain_verdict, relevant_lines, source_excerpt
from kernelgrade.service.pages.measurements import stop_reason, trials
from kernelgrade.service.pages.problem_page import baselines
from kernelgrade.service.schemas import VerdictName
from kernelgrade.service.stored_result import StoredResult
from kernelgrade.storage.page_data import ReferenceMedian


def timing(low: float, high: float) -> dict[str, object]:
    """A stored timing whose median's 95% interval is [low, high]."""
    middle = (low + high) / 2
    return {"n": 10, "median_ms": middle, "mean_ms": middle, "std_ms": 0.1, "min_ms": low, "max_ms": high,
            "ci95_low_ms": low, "ci95_high_ms": high, "stop_reason": "target precision", "samples_ms": [middle]}


def test_speedup_interval_bounds_reference_over_candidate_from_both_sides() -> None:
    result = StoredResult.read({"reference_timing": timing(9.0, 11.0), "candidate_timing": timing(4.0, 5.0)})
    interval = result.speedup_interval()
    assert interval is not None
    assert (interval.low, interval.high) == pytest.approx((9.0 / 5.0, 11.0 / 4.0))


@pytest.mark.parametrize("result", [{}, {"reference_timing": timing(1, 2)}, {"reference_timing": timing(1, 2),
                                    "candidate_timing": timing(0.0, 1.0)}, {"reference_timing": {"n": 3},
                                    "candidate_timing": timing(1, 2)}])
def test_speedup_interval_is_none_without_two_usable_intervals(result: dict[str, object]) -> None:
    assert StoredResult.read(result).speedup_interval() is None


def test_baselines_take_the_median_of_reference_medians_per_device_class() -> None:
    found = baselines([ReferenceMedian("cpu", 3.0), ReferenceMedian("gpu", 1.0), ReferenceMedian("cpu", 1.0),
                       ReferenceMedian("cpu", 2.5)])
    assert [(b.device_class, b.runs, b.median_ms, b.low_ms, b.high_ms) for b in found] == [
        ("cpu", 3, 2.5, 1.0, 3.0), ("gpu", 1, 1.0, 1.0, 1.0)]


def test_every_verdict_has_an_explanation_and_pending_work_explains_its_status() -> None:
    assert set(VERDICTS) == set(get_args(VerdictName))
    assert "Waiting for a judge" in explain_verdict(None, "queued")
    assert "did not build" in explain_verdict("compile_error", "done")


def test_relevant_lines_keep_errors_with_context_and_fall_back_to_the_tail() -> None:
    log = "\n".join(["ninja: building"] * 10 + ["x.cu(12): error: identifier \"foo\" is undefined", "1 error"]
                    + ["done"] * 5)
    lines = relevant_lines(log)
    assert lines[2] == 'x.cu(12): error: identifier "foo" is undefined' and len(lines) == 6
    assert relevant_lines("a\nb\nc", limit=2) == ["b", "c"]


def test_source_excerpt_numbers_the_lines_around_the_failing_one() -> None:
    source = "\n".join(f"line {n}" for n in range(1, 11))
    assert source_excerpt(source, 2, around=1) == [(1, "line 1"), (2, "line 2"), (3, "line 3")]
    assert source_excerpt(source, None) == [] and source_excerpt(source, 99) == []


@pytest.mark.parametrize(("reason", "words"), [
    ("target_precision", "precise enough"), ("max_reps+max_reps", "rep cap, before and after"),
    ("target_precision+max_device_time", "before: precise enough; after: device-time cap"),
    ("some_new_reason", "some new reason")])
def test_stop_reasons_are_words_that_wrap(reason: str, words: str) -> None:
    assert stop_reason(reason) == words


def test_trials_show_the_norm_wise_error_against_float64_or_else_against_the_reference() -> None:
    oracle = trials(StoredResult.read({"trials": [{
        "index": 0, "secret": False, "passed": False, "max_rel_error": 7e12, "rel_error_vs_reference": 0.9,
        "rel_error_vs_oracle": 1.0, "reference_error_vs_oracle": 8e-8, "max_abs_error": 2}]}).trials)
    assert oracle.against == "float64 result"
    assert [(r.relative_error, r.pytorch_error, r.max_abs_error) for r in oracle.rows] == [(1.0, 8e-8, 2.0)]
    tolerance = trials(StoredResult.read({"trials": [{
        "index": 0, "secret": True, "passed": True, "max_rel_error": 3e9, "rel_error_vs_reference": 2e-7,
        "rel_error_vs_oracle": None}]}).trials)
    assert tolerance.against == "reference"
    assert [(r.relative_error, r.pytorch_error) for r in tolerance.rows] == [(2e-7, None)]
    assert trials([]).rows == [] and trials(StoredResult.read({}).trials).rows == []
