"""A problem prepared before its first submission: its public trials and whole secret pool computed once, read
back by the evaluations after it and by a restarted judge, and never done twice."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch

from kernelgrade.evaluator import EvalRequest, SubprocessLauncher, TrialPlan, Warm, prepare
from kernelgrade.evaluator.device_cache import KEEP_CACHED_BYTES
from kernelgrade.evaluator.host import reference_cache, trial_store
from kernelgrade.evaluator.host.reference_cache import References
from kernelgrade.evaluator.host.run_children import RunChildren
from kernelgrade.evaluator.host.trial_store import TrialStore
from kernelgrade.evaluator.judge.correctness import trial_seeds
from kernelgrade.evaluator.request import DeviceKind, ProblemSpec
from tests.evaluator.test_warm import ADD, BATCH_NORM

CPU = torch.device("cpu")
PLAN = TrialPlan(public_trials=3, secret_trials=2)
POOL = 8  # References' default secret pool

# Its output's value decides nothing, but .item() has no value on torch's meta device.
NOT_ON_META = ProblemSpec("not_on_meta", """
import torch
class Model(torch.nn.Module):
    def forward(self, a):
        return a * (1.0 if a.sum().item() != 0.5 else 2.0)
def get_inputs():
    return [torch.randn(64)]
def get_init_inputs():
    return []
""", device=DeviceKind.CPU, content_hash="not-on-meta-v1")

BROKEN = ProblemSpec("broken", """
import torch
class Model(torch.nn.Module):
    def forward(self, a):
        raise RuntimeError("the reference is broken")
def get_inputs():
    return [torch.randn(8)]
def get_init_inputs():
    return []
""", device=DeviceKind.CPU, content_hash="broken-v1")


@pytest.fixture
def judge(tmp_path: Path) -> Iterator[Warm]:
    """A judge's warm bundle as a fresh process has it: no child started, the store on disk."""
    warm = restarted(tmp_path)
    yield warm
    warm.close()


def restarted(root: Path) -> Warm:
    return Warm(RunChildren(SubprocessLauncher(), root / "work", 0), References(store=TrialStore(root / "prepared")))


def request(tmp_path: Path, problem: ProblemSpec = ADD) -> EvalRequest:
    return EvalRequest(problem=problem, submission="", cache_dir=tmp_path / "cache", work_root=tmp_path / "work",
                       trials=PLAN)


def test_a_prepared_problem_s_trials_are_read_back_by_the_evaluations_after_a_restart(
        judge: Warm, tmp_path: Path) -> None:
    done = prepare(request(tmp_path), judge)
    assert (done.trials, done.computed, done.finished, done.note) == (PLAN.public_trials + POOL, 3 + POOL, True, "")
    again = restarted(tmp_path)
    try:
        assert prepare(request(tmp_path), again).note == "prepared before"
        references = again.references
        assert references is not None
        pooled = references.secret_seeds(ADD, CPU, PLAN.secret_trials)  # an evaluation's draw from the pool
        reference = references.reference(ADD, CPU, PLAN.seed)
        trials = trial_seeds(PLAN, "", pooled)
        assert [reference.trial(t.seed).prepared for t in trials] == ["stored"] * len(trials)
    finally:
        again.close()


@pytest.mark.parametrize(("problem", "computed"), [(ADD, 0), (NOT_ON_META, 1)])
def test_a_problem_with_trials_too_large_to_keep_is_left_to_its_evaluations(
        problem: ProblemSpec, computed: int, judge: Warm, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Known too large from the meta device, nothing is computed; where meta cannot tell, the first trial does."""
    monkeypatch.setattr(trial_store, "STORE_MAX_BYTES", 16)
    done = prepare(request(tmp_path, problem), judge)
    assert (done.trials, done.computed, done.finished) == (computed, computed, False)
    assert "made per evaluation" in done.note
    assert prepare(request(tmp_path, problem), judge).note != "prepared before"  # nothing marked


def test_a_reference_that_changes_when_it_runs_is_not_marked_prepared(judge: Warm, tmp_path: Path) -> None:
    done = prepare(request(tmp_path, BATCH_NORM), judge)
    assert (done.trials, done.finished) == (1, False) and "changes when it runs" in done.note


def test_a_reference_that_fails_is_reported_not_raised(judge: Warm, tmp_path: Path) -> None:
    done = prepare(request(tmp_path, BROKEN), judge)
    assert not done.finished and "the reference is broken" in done.note


def test_a_judge_that_keeps_nothing_prepares_nothing(tmp_path: Path) -> None:
    warm = Warm.nothing(SubprocessLauncher(), tmp_path / "work", tmp_path / "cache")
    try:
        done = prepare(request(tmp_path), warm)
    finally:
        warm.close()
    assert (done.trials, done.finished) == (0, False) and "keeps no trials" in done.note


def test_a_reference_already_known_to_change_when_it_runs_is_not_marked_prepared(judge: Warm, tmp_path: Path) -> None:
    """An evaluation found it stateful first: the judge hands out references of it that store nothing."""
    references = judge.references
    assert references is not None
    references.reference(BATCH_NORM, CPU, PLAN.seed).trial(1)
    assert not references.reference(BATCH_NORM, CPU, PLAN.seed).stores  # seen changed: rebuilt, storing nothing
    done = prepare(request(tmp_path, BATCH_NORM), judge)
    assert (done.trials, done.finished) == (1, False) and "changes when it runs" in done.note


# Its get_inputs() fails where the inputs of the trials drawn before it are still held.
COUNTS_HELD_INPUTS = ProblemSpec("counts_held_inputs", """
import weakref
import torch
drawn = []
class Model(torch.nn.Module):
    def forward(self, a):
        return a * 2.0
def get_inputs():
    held = sum(r() is not None for r in drawn)
    if held:
        raise RuntimeError(f"the inputs of {held} earlier trials are held")
    a = torch.randn(64)
    drawn.append(weakref.ref(a))
    return [a]
def get_init_inputs():
    return []
""", device=DeviceKind.CPU, content_hash="counts-held-inputs-v1")


def test_preparing_holds_one_trial_s_inputs_at_a_time(judge: Warm, tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """Those the reference does not keep are let go once counted: a problem's twelve trials of 8 GiB of inputs
    each took a GPU host's memory when all were held."""
    monkeypatch.setattr(reference_cache, "KEEP_TRIALS", 0)
    plain = dataclasses.replace(request(tmp_path, COUNTS_HELD_INPUTS), measure_timing=False)
    done = prepare(plain, judge)
    assert (done.trials, done.computed, done.finished, done.note) == (PLAN.public_trials + POOL, 3 + POOL, True, "")


# 128 MiB of input; its float64 reference run makes several 256 MiB intermediate tensors, gone by its end.
WIDE_INTERMEDIATES = ProblemSpec("wide_intermediates", """
import torch
class Model(torch.nn.Module):
    def forward(self, a):
        return ((a * 2.0).exp() + a.sin() * a.cos()).sum(dim=0)
def get_inputs():
    return [torch.randn(8192, 4096)]
def get_init_inputs():
    return []
""", device=DeviceKind.CUDA, content_hash="wide-intermediates-v1")


@pytest.mark.gpu
def test_preparing_hands_the_float64_runs_cache_back(judge: Warm, tmp_path: Path) -> None:
    """A judge's next evaluation has a child beside it: what the preparation freed is not kept cached."""
    device = torch.device("cuda")
    torch.cuda.reset_peak_memory_stats(device)
    prepare(request(tmp_path, WIDE_INTERMEDIATES), judge)
    assert torch.cuda.max_memory_reserved(device) > 2 * KEEP_CACHED_BYTES  # it did hold that much at its height
    assert torch.cuda.memory_reserved(device) - torch.cuda.memory_allocated(device) <= KEEP_CACHED_BYTES
