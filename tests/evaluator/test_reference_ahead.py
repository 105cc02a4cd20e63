"""The reference's child for timing is loaded while the candidate's last correctness trials run, once its first
trial has passed, in a spare that is ready or starting then; else at the start of timing, as before."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch

from kernelgrade.evaluator import SubprocessLauncher, TrialPlan, Verdict, Warm, evaluate
from kernelgrade.evaluator.host.reference import Reference
from kernelgrade.evaluator.host.reference_cache import References
from kernelgrade.evaluator.host.run_children import ChildKind, RunChildren
from kernelgrade.evaluator.judge.pipeline import child_kind
from kernelgrade.evaluator.judge.reference_ahead import ReferenceAhead
from kernelgrade.evaluator.judge.reference_child import ReferenceChild, child_key
from kernelgrade.evaluator.request import TimingParams
from kernelgrade.evaluator.wire import tensorfile
from tests.conftest import TEST_LIMITS, RequestFactory
from tests.evaluator.test_warm import ADD

CPU = ChildKind(None, "cpu", ())
SEED = 42
SMALL = TimingParams(warmup_calls=2, warmup_ms=1.0, min_reps=5, max_reps=10, max_device_ms=50.0, max_wall_ms=500.0,
                     input_sets=2, reference_check_reps=0)
# ADD's candidate written the other way round: the same values, another source.
ADD_NEW = ADD.source.replace("class Model", "class ModelNew").replace("return a + b", "return b + a")
WRONG = ADD_NEW.replace("return b + a", "return a - b")


def _ready(children: RunChildren, kind: ChildKind, count: int, timeout: float = 60.0) -> None:
    children.refill(kind)
    deadline = time.monotonic() + timeout
    while children.ready(kind) < count:
        assert time.monotonic() < deadline, f"fewer than {count} spare children became ready"
        time.sleep(0.1)


def _reference() -> Reference:
    reference = References().reference(ADD, torch.device("cpu"), SEED)
    reference.trial(1)  # its output size, known to the judge by the timing stage
    return reference


@pytest.fixture
def children(tmp_path: Path) -> Iterator[RunChildren]:
    """A keeping judge's children, one spare and one reference's child kept; no spare started yet."""
    kept = RunChildren(SubprocessLauncher(), tmp_path / "work", spares=1, kept=1)
    yield kept
    kept.close()


def test_a_ready_spare_is_loaded_in_the_background_and_times_the_reference(children: RunChildren) -> None:
    reference = _reference()
    ahead = ReferenceAhead(children, CPU, reference, SEED, TEST_LIMITS)
    _ready(children, CPU, 1)
    ahead.start()
    child = ahead.child()
    assert child is not None and child.how == "loaded ahead"
    assert children.ready(CPU) == 0  # taken, and not replaced before the measurement
    sets = [reference.make_inputs(k) for k in range(SMALL.input_sets)]
    with ReferenceChild.loaded(children, CPU, reference, sets, SEED, 1 << 20, TEST_LIMITS, child) as given:
        assert given is child and len(given.run(SMALL).raw.device_ms) >= SMALL.min_reps
    ahead.close()
    assert children.keeps(child_key(reference, SEED, CPU))


def test_the_child_loaded_ahead_reads_the_timing_sets_and_timing_gives_it_the_same_files(
        children: RunChildren, tmp_path: Path) -> None:
    reference = _reference()
    paths = [tmp_path / f"timing_{k}.kgt" for k in range(SMALL.input_sets)]
    for k, path in enumerate(paths):
        tensorfile.save(path, reference.make_inputs(k))
    ahead = ReferenceAhead(children, CPU, reference, SEED, TEST_LIMITS, lambda: paths)
    _ready(children, CPU, 1)
    ahead.start()
    child = ahead.child()
    assert child is not None and child.how == "loaded ahead, timing sets read ahead"
    links = [(p.stat().st_ino, p.stat().st_ctime_ns) for p in child.sets]
    with ReferenceChild.loaded(children, CPU, reference, paths, SEED, 1 << 20, TEST_LIMITS, child) as given:
        # The same files are not linked again: the child keeps sets only from the very files it read.
        assert [(p.stat().st_ino, p.stat().st_ctime_ns) for p in given.sets] == links
        assert len(given.run(SMALL).raw.device_ms) >= SMALL.min_reps
    ahead.close()


def test_no_sets_are_read_ahead_for_an_evaluation_that_ends_before_timing(children: RunChildren) -> None:
    ahead = ReferenceAhead(children, CPU, _reference(), SEED, TEST_LIMITS, lambda: [])
    _ready(children, CPU, 1)
    ahead.start()
    child = ahead.child()
    assert child is not None and child.how == "loaded ahead" and child.sets == []
    child.close()
    ahead.close()


def test_a_spare_still_starting_is_waited_for_in_the_background(children: RunChildren) -> None:
    ahead = ReferenceAhead(children, CPU, _reference(), SEED, TEST_LIMITS)
    children.refill(CPU)
    ahead.start()  # seconds before the spare is ready
    child = ahead.child()
    assert child is not None and child.how == "loaded ahead"
    child.close()
    ahead.close()


def test_nothing_is_loaded_ahead_without_a_spare_coming_or_with_the_child_kept(children: RunChildren) -> None:
    reference = _reference()
    none_coming = ReferenceAhead(children, CPU, reference, SEED, TEST_LIMITS)
    none_coming.start()  # no spare is ready or starting, and none is started for it
    assert none_coming.child() is None and children.ready(CPU) == 0
    sets = [reference.make_inputs(k) for k in range(SMALL.input_sets)]
    with ReferenceChild.loaded(children, CPU, reference, sets, SEED, 1 << 20, TEST_LIMITS) as at_timing:
        assert none_coming.described(at_timing) == \
            "loaded: no spare child was ready or starting once the first trial had passed"
    children.let_go_of_kept()
    _ready(children, CPU, 1)
    unused = ReferenceAhead(children, CPU, reference, SEED, TEST_LIMITS)
    unused.start()
    assert not children.keeps(child_key(reference, SEED, CPU))
    unused.close()  # the evaluation ended before timing: the loaded child is kept, as a timed one is
    assert children.keeps(child_key(reference, SEED, CPU))
    _ready(children, CPU, 1)
    kept = ReferenceAhead(children, CPU, reference, SEED, TEST_LIMITS)
    kept.start()
    assert kept.child() is None and children.ready(CPU) == 1


def test_a_stream_finds_its_reference_loaded_ahead_then_kept_and_a_wrong_candidate_takes_no_spare(
        tmp_path: Path, make_request: RequestFactory) -> None:
    request = make_request(ADD, ADD_NEW, trials=TrialPlan(public_trials=2, secret_trials=1), timing=SMALL)
    warm = Warm.keeping(SubprocessLauncher(), tmp_path / "work", tmp_path / "cache", spares=2)
    kind = child_kind(request)
    try:
        _ready(warm.children, kind, 2)  # one for the candidate, one to load ahead
        first = evaluate(request, warm=warm)
        _ready(warm.children, kind, 2)
        second = evaluate(request, warm=warm)
        other = dataclasses.replace(ADD, content_hash="add-v9")
        _ready(warm.children, kind, 2)
        wrong = evaluate(dataclasses.replace(request, problem=other, submission=WRONG), warm=warm)
        assert warm.references is not None
        seed = request.trials.seed
        loaded = warm.children.keeps(child_key(warm.references.reference(other, torch.device("cpu"), seed), seed, kind))
    finally:
        warm.close()
    assert [first.verdict, second.verdict] == [Verdict.CORRECT] * 2, (first.failure, second.failure)
    assert dict(first.extra)["reference_child"] == "loaded ahead"  # on the CPU the sets are read at timing
    assert dict(second.extra)["reference_child"] == "kept"
    assert wrong.verdict is Verdict.INCORRECT and "reference_child" not in dict(wrong.extra)
    assert not loaded  # the wrong candidate's first trial failed: no reference was loaded for its timing
