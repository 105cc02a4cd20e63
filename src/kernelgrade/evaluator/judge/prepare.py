"""A problem prepared before its first submission: the expected outputs and float64 oracles of its public
trials and of every seed of its secret pool, computed while the judge has nothing to grade and kept in the
trial store (trial_store.py), where the judges of the host and their restarts find them. The evaluations that
follow read them back instead of running the reference and the oracle on their path. Its reference is also
timed in full, so that its first verdict checks that timing instead of measuring it (judge/reference_timing.py).

A problem whose trials are too large for the store (known from the meta device, or else from its first trial),
or whose reference changes when it runs, is left to its evaluations: computing its trials ahead would only hold
the judge up. A problem whose preparation finished is marked in the store, so that no judge of the host does it
twice.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass

import torch

from kernelgrade.evaluator import device_draws, timing
from kernelgrade.evaluator.device_cache import leave_room, release_pinned
from kernelgrade.evaluator.host import trial_store
from kernelgrade.evaluator.host.environment import device_class
from kernelgrade.evaluator.host.reference import Reference, TrialData, derive_seed
from kernelgrade.evaluator.host.reference_cache import References
from kernelgrade.evaluator.host.trial_store import TrialStore, digest, problem_version
from kernelgrade.evaluator.host.warm import Warm
from kernelgrade.evaluator.judge import reference_timing
from kernelgrade.evaluator.judge.correctness import trial_seeds
from kernelgrade.evaluator.judge.job import judge_device, on_device, timing_params
from kernelgrade.evaluator.judge.pipeline import child_kind
from kernelgrade.evaluator.judge.reference_child import ReferenceChild
from kernelgrade.evaluator.problem_memory import estimate
from kernelgrade.evaluator.request import EvalRequest

_TOO_LARGE = "a trial's expected outputs take over {} MiB: they are made per evaluation"


@dataclass(frozen=True)
class Preparation:
    """What preparing one problem did; `note` says why it stopped short or did nothing, "" when it finished."""

    problem: str
    trials: int = 0  # trials made ready: public ones and the secret pool's
    computed: int = 0  # of them, computed now (the others were read back from the store or kept in memory)
    seconds: float = 0.0
    finished: bool = False  # every trial is in the store: the problem is marked prepared
    reference_timed: bool = False  # its timing distribution is stored: its first verdict checks it
    note: str = ""


def prepare(request: EvalRequest, warm: Warm) -> Preparation:
    """Prepare the request's problem on its device for the request's trial plan. Never raises: a reference that
    fails here fails its evaluations too, which report it; the note says what happened."""
    name = request.problem.name
    references = warm.references
    if references is None or references.store is None:
        return Preparation(name, note="this judge keeps no trials between evaluations")
    device = judge_device(request)
    key = _key(request, device, references)
    if references.store.prepared(key):
        return Preparation(name, finished=True, note="prepared before")
    if _expected_bytes(request) > trial_store.STORE_MAX_BYTES:
        return Preparation(name, note=_TOO_LARGE.format(trial_store.STORE_MAX_BYTES >> 20))
    started = time.monotonic()
    try:
        with warm.children.using(cpu=device.type == "cpu"):
            with _beside_measurements(warm, device):
                made, why_not = _made_trials(request, device, references)
            timed = not why_not and _timed_ahead(request, warm, device, references)
    except Exception as exc:  # the problem's own code, or the device running out: the evaluations will say
        return Preparation(name, seconds=time.monotonic() - started, note=f"the reference failed: {exc!r}"[:500])
    finally:
        # The float64 runs' intermediate tensors stay in this process's cache otherwise, beside the next
        # evaluation's child until the judge's first hand-back there (evaluate() hands back after each job).
        leave_room(device)
        release_pinned()
    return _finish(name, made, why_not, timed, time.monotonic() - started, references.store, key)


def _beside_measurements(warm: Warm, device: torch.device) -> AbstractContextManager[object]:
    """A CPU problem's reference and oracle compete with the CPU measurements of the host's judges: they hold
    the host lock as a build does, so that no measurement runs beside them (host_lock.py)."""
    lock = warm.children.host_lock
    return lock.shared() if device.type == "cpu" and lock is not None else nullcontext()


def _made_trials(request: EvalRequest, device: torch.device, references: References) -> tuple[Counter[str], str]:
    """How the trials made ready were had ("computed", "stored", "kept": TrialData.prepared), in order up to the
    first one that cannot be stored, and why it cannot ("" if none). Each trial is let go once counted: the
    reference keeps what its room allows, and holding them all here held every trial's inputs at once (twelve
    trials of KernelBench's 94_MSELoss, 8 GiB of inputs each, took the 128 GiB of a GPU host)."""
    with on_device(device):
        reference = references.reference(request.problem, device, request.trials.seed)
        seeds = [t.seed for t in trial_seeds(request.trials, "", references.pool_seeds(request.problem, device))]
        made: Counter[str] = Counter()
        for seed in seeds:
            trial = reference.trial(seed)
            made[trial.prepared] += 1
            if _too_large(trial):
                return made, _TOO_LARGE.format(trial_store.STORE_MAX_BYTES >> 20)
            if not reference.stores:
                return made, "the reference changes when it runs: its trials are made per evaluation"
            del trial
    return made, ""


def _timed_ahead(request: EvalRequest, warm: Warm, device: torch.device, references: References) -> bool:
    """The reference's timing distribution, measured as a verdict's full measurement is and stored where its two
    runs agree, so that the problem's first verdict checks it (judge/reference_timing.py). Measured alone on the
    device, as a verdict's timing is; a CPU problem only where no build or measurement holds the host now."""
    params = timing_params(request)
    if not request.measure_timing or params.reference_check_reps <= 0:
        return False
    with on_device(device):
        reference = references.reference(request.problem, device, request.trials.seed)
        flush_bytes = params.flush_bytes or timing.default_flush_bytes(device)
        try:
            return reference_timing.measured_ahead(
                reference, lambda: _alone_in_child(request, warm, reference, flush_bytes), params, flush_bytes)
        except _HostBusy:
            return False


class _HostBusy(Exception):
    """A build or another judge's measurement holds the host: a CPU problem's reference is not timed now."""


@contextmanager
def _alone_in_child(request: EvalRequest, warm: Warm, reference: Reference, flush_bytes: int
                    ) -> Iterator[ReferenceChild]:
    """The reference loaded in a run child of the kind the problem's candidates get (one of the judge's spares
    where one waits); then, held while it is timed, the judge's quiet lock and the host lock if it is free
    (_HostBusy if not). The child comes first: a spare's start holds or waits for both locks."""
    seed = request.trials.seed
    # Any values do: the timing does not depend on them, and a verdict's own timing inputs stay secret.
    sets = [reference.make_inputs(derive_seed(seed, "prepared timing", k, ""))
            for k in range(timing_params(request).input_sets)]
    kind = child_kind(request)
    with ReferenceChild.loaded(warm.children, kind, reference, sets, seed, flush_bytes, request.limits) as child, \
            warm.children.quiet(), _host_if_free(warm, reference.device) as alone:
        if not alone:
            raise _HostBusy
        yield child


@contextmanager
def _host_if_free(warm: Warm, device: torch.device) -> Iterator[bool]:
    """For a CPU problem, the host lock alone if it is free now. Waiting for it would hold this idle judge, which a
    job may need, for as long as a build runs, and keep the next builds out meanwhile (host_lock.py)."""
    lock = warm.children.host_lock
    if device.type != "cpu" or lock is None:
        yield True
        return
    with lock.held_if_free() as free:
        yield free


def _finish(name: str, made: Counter[str], why_not: str, timed: bool, seconds: float, store: TrialStore,
            key: str) -> Preparation:
    if why_not:
        return Preparation(name, made.total(), made["computed"], seconds, note=why_not)
    summary = Preparation(name, made.total(), made["computed"], seconds, finished=True, reference_timed=timed)
    store.mark_prepared(key, f"{summary}\n")
    return summary


def _expected_bytes(request: EvalRequest) -> int:
    """A trial's expected outputs with their oracle, from the reference run on torch's meta device: a problem far
    over the store's limit is left alone before its first trial holds the judge up for seconds. 0 where the
    problem does not run on meta; its first trial then tells."""
    try:
        return estimate(request.problem.source, request.problem.name).expected
    except Exception:  # the problem's own code on meta: anything it raises only means "not known"
        return 0


def _too_large(trial: TrialData) -> bool:
    return not trial_store.storable([*trial.expected.refs, *(trial.expected.oracles or [])])


def _key(request: EvalRequest, device: torch.device, references: References) -> str:
    """Preparation covers one problem version on one device class, torch version, draw scheme and trial plan."""
    plan = request.trials
    return digest(problem_version(request.problem), device_class(device), torch.__version__, plan.seed,
                  plan.public_trials, references.secret_pool, device_draws.DRAW_SCHEME)
