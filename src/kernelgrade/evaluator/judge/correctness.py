"""The correctness stage: each trial's outputs from the child, judged against the reference and the oracle.

Inputs go to the child, and outputs come back, through the child's shared region (wire/shared_region.py); through
files where the child has no region or the outputs do not fit there. The expected values never leave the judge.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from kernelgrade.evaluator.compare import Comparison, Expected, check_structure
from kernelgrade.evaluator.device_cache import allocated, leave_room, peak_above
from kernelgrade.evaluator.host.device_room import HEADER_ROOM, compare_in_room, read_outputs, read_region
from kernelgrade.evaluator.host.reference import Footprint, Reference, TrialData, derive_seed
from kernelgrade.evaluator.host.session import RunSession
from kernelgrade.evaluator.judge.job import Job, on_device
from kernelgrade.evaluator.judge.outcome import Verdicted
from kernelgrade.evaluator.judge.record import Record
from kernelgrade.evaluator.judge.settle import settle_s
from kernelgrade.evaluator.request import Limits, TrialPlan
from kernelgrade.evaluator.result import Failure, Finding, Severity, Stage, TrialResult
from kernelgrade.evaluator.wire import tensorfile
from kernelgrade.evaluator.wire.replies import CallReply, Integrity
from kernelgrade.evaluator.wire.shared_region import aligned

# A trial made ahead holds its expected outputs and oracles beside those of the trial being judged, while the
# child holds its own inputs and outputs: past this share of the card, trials are made one at a time.
AHEAD_SHARE = 8


@dataclass(frozen=True)
class Trial:
    index: int
    secret: bool
    seed: int


def check_correctness(job: Job, record: Record, session: RunSession, ahead: TrialInputs,
                      first_passed: Callable[[], None] = lambda: None) -> Integrity | None:
    """Runs the trials `ahead` makes (trial_inputs()). Returns the last call's integrity report, whose extension
    record the pipeline reads afterwards. `first_passed` is called once the first trial has passed, before the
    next one runs."""
    integrity: Integrity | None = None
    trials = ahead.trials
    with job.in_stage(Stage.CORRECTNESS, "checking correctness"):
        for done, trial in enumerate(trials):
            job.report(Stage.CORRECTNESS, "correctness", done, len(trials))
            integrity = _run_trial(job, record, session, trial, ahead)
            if done == 0:
                first_passed()
        job.report(Stage.CORRECTNESS, "correctness", len(trials), len(trials))
    return integrity


def trial_inputs(job: Job, reference: Reference, session: RunSession) -> TrialInputs:
    """The job's trials, the first one started now: opened before the candidate loads, so that the judge makes
    the first trial (its inputs, and its expected outputs where they are neither kept nor stored) while the
    child builds ModelNew, instead of after it with the device idle. On a KernelBench level 2 stream on an
    H200, loading and making the first trial each took about half a second per GEMM problem, and 8 s each
    for 55_Matmul_MaxPool_Sum_Scale. The session's region is then grown to hold that trial's call, still
    during the load: in a mixed stream on an H200 the growth took 1.2-1.5 s of each evaluation of a level 2
    problem with large outputs, device idle. Starting the growth beside the first trial's making instead, at the
    size the problem's last evaluation took, gained nothing there (KernelBench's softmax and 94_MSELoss, both
    ways in one run): their first trial takes about 0.4 s to make, their 8-12 GiB regions 3-4 s to grow."""
    trials = trial_seeds(job.request.trials, job.secret, job.secret_seeds())
    return TrialInputs(reference, trials, first_made=lambda data: session.make_room(data.inputs, _room_after(data)))


class TrialInputs:
    """Each trial's data, made one trial ahead in the background: the judge draws trial k+1's inputs (and computes
    its expected outputs, where they are not kept) while the child runs trial k. One ahead, not all: a problem's
    inputs can be gigabytes. Where making a trial takes more than `ahead_room` of the device, none is made ahead:
    what it keeps (expected outputs and oracles) or what it takes at its height (the reference run in float64, its
    intermediate tensors included). The child's call runs beside a trial made ahead: on a stream of KernelBench
    level 2 problems (large float64 convolutions) the judge was seen holding 66 GiB of an H200 while children ran,
    and honest candidates ran out of memory beside it."""

    def __init__(self, reference: Reference, trials: list[Trial], ahead_room: int | None = None,
                 peak: Callable[[torch.device, int], int] = peak_above,
                 first_made: Callable[[TrialData], None] = lambda _data: None) -> None:
        """`ahead_room`: device bytes a trial made ahead may add (default: default_ahead_room() of its device).
        `peak`: how far the judge's allocations on a device peaked above a base (device_cache.peak_above).
        `first_made`: called with the first trial in the thread that made it, before it can be taken; not once
        the trials are closed (an evaluation that ended at load)."""
        self.reference, self.trials = reference, trials
        self.ahead_room = ahead_room if ahead_room is not None else default_ahead_room(reference.device)
        self._peak, self._highest = peak, 0
        self._first_made, self._closed = first_made, threading.Event()
        self._pool = ThreadPoolExecutor(1, thread_name_prefix="trial-inputs")
        self._next: Future[TrialData] | None = self._submit(0)

    def __enter__(self) -> TrialInputs:
        return self

    def __exit__(self, *_exc: object) -> None:
        self._closed.set()
        self._pool.shutdown(wait=True, cancel_futures=True)

    def take(self, index: int) -> TrialData:
        """Trial `index`'s data (trials are taken in order); starts on the next one if there is room."""
        pending = self._next if self._next is not None else self._submit(index)
        assert pending is not None, "every trial was taken"
        made = pending.result()
        # Wherever they are: an oracle too large for the device is on the host, and so is a CPU problem's.
        held = Footprint.of([*made.expected.refs, *(made.expected.oracles or [])])
        need = held.host + max(held.device, self._highest)
        self._next = self._submit(index + 1) if need <= self.ahead_room else None
        return made

    def _submit(self, index: int) -> Future[TrialData] | None:
        return self._pool.submit(self._make, self.trials[index]) if index < len(self.trials) else None

    def _make(self, trial: Trial) -> TrialData:
        device = self.reference.device
        base = allocated(device)
        with on_device(device):
            data = self.reference.trial(trial.seed)
        # An upper bound: the evaluation's peak so far, the comparisons of earlier trials included. Each making's
        # own peak let large problems make every trial ahead, and saved no device time (docs/grading.md).
        self._highest = max(self._highest, self._peak(device, base))
        if trial == self.trials[0] and not self._closed.is_set():
            with on_device(device):  # a region's registration with CUDA goes to the thread's current GPU
                self._first_made(data)
        return data


def default_ahead_room(device: torch.device) -> int:
    """An eighth of a GPU (10 GiB of an H100): a 6 GiB elementwise output with its float64 oracle (18 GiB a
    trial) is made one trial at a time, a 4096^2 matmul's (192 MiB) ahead. On the CPU, always ahead."""
    if device.type != "cuda":
        return 1 << 62
    return int(torch.cuda.get_device_properties(device).total_memory) // AHEAD_SHARE


def trial_seeds(plan: TrialPlan, secret: str, pooled: list[int] | None = None) -> list[Trial]:
    """Public trials derive from the request's seed alone; secret ones from the judge's pool of random seeds
    (reference_cache.py) or else from the secret, which never reaches the child (it gets input files, never
    seeds)."""
    public = [Trial(i, False, derive_seed(plan.seed, "trial", i, "")) for i in range(plan.public_trials)]
    seeds = pooled if pooled is not None else [derive_seed(plan.seed, "secret", j, secret)
                                               for j in range(plan.secret_trials)]
    hidden = [Trial(plan.public_trials + j, True, seed) for j, seed in enumerate(seeds)]
    return public + hidden


def _run_trial(job: Job, record: Record, session: RunSession, trial: Trial, ahead: TrialInputs) -> Integrity:
    inputs_path, outputs_path = job.work_dir / f"trial_inputs_{trial.index}.kgt", job.work_dir / "trial_outputs.kgt"
    with job.timed("correctness:inputs"):  # the trial's data, or the wait for its making in the background
        data = ahead.take(trial.index)
    # The making's own parts: not parts of the correctness stage, whose time they overlap where the trial was made
    # ahead in the background (a label's stage is what comes before its colon).
    for part, seconds in data.made_s:
        job.stage_seconds.append((f"trial_making:{part}", round(seconds, 4)))
    sizes = [r.numel() * r.element_size() for r in data.expected.refs]
    outputs_bytes = sum(sizes)
    room_after = _room_after(data)
    with job.timed("correctness:grow"):  # the region mapped again and registered where the call needs more
        session.grow_region(data.inputs, room_after)
    with job.timed("correctness:place"):  # the inputs copied in
        # Placed only now: the region holds one call's inputs, and a file written ahead would show the child
        # the next trial's inputs during this one's call.
        inputs_bytes = session.place_inputs(data.inputs, inputs_path, room_after)
    record.prepared[data.prepared] += 1
    with job.timed("correctness:call"):
        moved = outputs_bytes + tensorfile.memory_size(data.inputs)
        outputs_at = aligned(inputs_bytes)
        leave_room(job.device)
        reply = session.call(inputs_path, outputs_path, sizes, Limits.moving(job.request.limits.call_s, moved),
                             settle_s(ahead.reference.forward_s), outputs_at + outputs_bytes + HEADER_ROOM,
                             inputs_bytes)
    tensorfile.remove(inputs_path)
    with job.timed("correctness:judge"):
        try:
            _judge_call(job, record, trial, reply, _mutated(data, reply), data.expected,
                        lambda: _read_outputs(session, reply, outputs_path, job.device, outputs_bytes, outputs_at))
        finally:
            tensorfile.remove(outputs_path)
    return reply.integrity


def _room_after(data: TrialData) -> int:
    """What a trial's call needs in the region after its inputs: the expected outputs' bytes and a header."""
    return sum(r.numel() * r.element_size() for r in data.expected.refs) + HEADER_ROOM


def _read_outputs(session: RunSession, reply: CallReply, path: Path, device: torch.device,
                  outputs_bytes: int, start: int) -> list[Any] | Comparison:
    """The outputs the child wrote (into the shared region or the file, as its reply says), read once their
    structure matched the reference's: more than those outputs and the largest header, or what cannot be read,
    is not what the harness writes."""
    try:
        if not reply.region_bytes:
            return read_outputs(path, device, outputs_bytes)
        return read_region(session.region, reply.region_bytes, device, outputs_bytes, start)
    except tensorfile.TensorFileError as exc:
        return Comparison(False, "output_unreadable", f"the outputs the harness wrote could not be read: {exc}")


def _judge_call(job: Job, record: Record, trial: Trial, reply: CallReply, mutated: list[int], expected: Expected,
                read: Callable[[], list[Any] | Comparison]) -> None:
    record.note(record.child_reported(reply.integrity))
    if reply.changed_after_return:
        record.add(Finding("output_changed_after_return", Severity.FLAG,
            "the output kept changing after forward() returned: it was still being written by work the"
            " harness did not wait for (another stream, a thread or process, or a batched future call)."))
    record.oracles_on_host["correctness"] += expected.oracle_on_host(job.device)
    comparison = _structure_failure(reply, list(expected.refs), mutated, job.device.type) or read()
    if not isinstance(comparison, Comparison):
        comparison = compare_in_room(comparison, expected, job.request.problem.precision, job.device)
    record.trials.append(TrialResult(trial.index, trial.secret, comparison.passed, comparison.message,
                                     comparison.max_abs_error, comparison.max_rel_error,
                                     comparison.rel_error_vs_reference, comparison.rel_error_vs_oracle,
                                     comparison.reference_error_vs_oracle))
    if not comparison.passed:
        kind = "secret" if trial.secret else "public"
        raise Verdicted(Failure(Stage.CORRECTNESS, comparison.code,
                                f"trial {trial.index} ({kind} seed): {comparison.message}"))


def _structure_failure(reply: CallReply, refs: list[torch.Tensor], mutated: list[int],
                       device_type: str) -> Comparison | None:
    """Wrong types, shapes, dtypes or devices first; then inputs changed in place. Values come after."""
    structure = check_structure(reply.outputs, refs, device_type)
    if structure is None and mutated:
        which = ", ".join(str(i) for i in mutated)
        structure = Comparison(False, "input_mutated", f"forward() modified input(s) {which} in place;"
                               " the reference does not. Work on copies or new tensors.")
    return structure


def _mutated(data: TrialData, reply: CallReply) -> list[int]:
    """Inputs changed by the call: the child's own comparison, and the judge's comparison of the child's
    post-call fingerprints with its own of the pristine inputs."""
    theirs = reply.input_fingerprints
    judged = {i for i, (a, b) in enumerate(zip(data.fingerprints, theirs, strict=False))
              if isinstance(data.inputs[i], torch.Tensor) and a != b}
    return sorted(judged | set(reply.mutated_inputs))
