"""The re-check of timed outputs (docs/threats.md 5-7): a sample of what the timed calls returned, compared
against the reference on the same fresh inputs, so a kernel cannot be right when checked and fast when timed.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from kernelgrade.evaluator import timing
from kernelgrade.evaluator.host.device_room import HEADER_ROOM, compare_in_room, read_outputs, read_region
from kernelgrade.evaluator.host.reference import Reference, to_device
from kernelgrade.evaluator.host.session import RunSession
from kernelgrade.evaluator.judge.job import Job
from kernelgrade.evaluator.judge.outcome import Verdicted
from kernelgrade.evaluator.judge.record import Record
from kernelgrade.evaluator.request import Limits
from kernelgrade.evaluator.result import Failure, Finding, Severity, Stage
from kernelgrade.evaluator.wire import tensorfile
from kernelgrade.evaluator.wire.replies import TimedOutputsReply
from kernelgrade.evaluator.wire.shared_region import aligned


def recheck_timed_outputs(job: Job, record: Record, session: RunSession, reference: Reference,
                          sets: list[list[Any]]) -> None:
    """The kept outputs come a round at a time: as many as the child's shared region holds (all of them, unless
    they are large), or one in a file, each round read and checked before the next is asked for."""
    kept = _KeptOutputs(job, record, session, reference, len(sets) + timing.SAMPLED_OUTPUTS)
    reply = kept.ask(0)
    if reply.changed_after_return:
        record.add(Finding("timed_output_changed_after_return", Severity.FLAG,
            f"timed output(s) of rep(s) {', '.join(map(str, reply.changed_after_return[:8]))} changed after"
            " their rep ended (after its device-wide synchronize): work outlived the timed call."))
    # The child keeps the last output of each input set plus a sample; a larger count is not its harness.
    if not 0 <= reply.kept <= kept.most:
        raise _wrong(f"the harness reported {reply.kept} timed outputs; it keeps at most {kept.most}")
    placed = PlacedSets(sets, job.device)
    first = 0
    while first < reply.kept:
        if first:
            reply = kept.ask(first)
        for loaded in kept.read(reply, first):
            _recheck(job, record, reference, placed, loaded)
        first += len(reply.ends)


@dataclass(frozen=True)
class _KeptOutputs:
    """The child's kept timed outputs, asked for and read a round at a time."""

    job: Job
    record: Record
    session: RunSession
    reference: Reference
    most: int  # the most the child keeps

    def ask(self, first: int) -> TimedOutputsReply:
        """The round from kept output `first` on; the region is offered room for one at least."""
        with self.job.timed("recheck:outputs"):
            # A file goes into the work dir itself: a root judge's child runs as another uid and writes only there.
            reply = self.session.timed_outputs(
                self.job.work_dir, Limits.moving(self.job.request.limits.call_s, self.most * self.output_bytes),
                first, region_bytes=self.output_bytes + HEADER_ROOM)
        self.record.note(self.record.child_reported(reply.integrity))
        return reply

    @property
    def output_bytes(self) -> int:
        return self.reference.output_bytes

    def read(self, reply: TimedOutputsReply, first: int) -> Iterator[Any]:
        """The round's outputs in order: from the region where they end there, else (end 0) from a file."""
        if not 0 < len(reply.ends) <= reply.kept - first:
            raise _wrong(f"the harness wrote {len(reply.ends)} timed outputs from output {first} on, of {reply.kept}")
        start = 0
        for index, end in enumerate(reply.ends, start=first):
            with self.job.timed("recheck:read"):
                loaded = self._from_region(start, end) if end else self._from_file(index)
            yield loaded
            start = aligned(end)

    def _from_region(self, start: int, end: int) -> Any:
        try:
            return read_region(self.session.region, end, self.job.device, self.output_bytes, start)
        except tensorfile.TensorFileError as exc:
            raise _wrong(f"a timed output the harness reported is unreadable: {exc}") from None

    def _from_file(self, index: int) -> Any:
        return _load_timed(self.job.work_dir / f"timed_{index}.kgt", self.job.device, self.output_bytes)


def _recheck(job: Job, record: Record, reference: Reference, placed: PlacedSets, loaded: Any) -> None:
    """One kept output against the reference on its rep's inputs."""
    set_index, step, rep, outs = _timed_entry(loaded, placed.count)
    with job.timed("recheck:reference"):
        inputs = placed.rep_inputs(set_index, step)
        expected = reference.expected(inputs)
        timing.device_synchronize(job.device)  # the reference's own time, not the comparison's
    record.oracles_on_host["recheck"] += expected.oracle_on_host(job.device)
    refs = expected.refs
    if any(o is None for o in outs) or len(outs) != len(refs) or any(
            tuple(o.shape) != tuple(r.shape) or o.dtype != r.dtype for o, r in zip(outs, refs, strict=True)):
        raise _wrong(f"timed rep {rep}: the output of a timed call has the wrong structure")
    with job.timed("recheck:compare"):
        comparison = compare_in_room(outs, expected, job.timed_policy, job.device)
    if not comparison.passed:
        raise _wrong(f"timed rep {rep} (input set {set_index}, scale step {step}): a timed call's output is"
                     f" wrong although the checked calls were right: {comparison.message}")


class PlacedSets:
    """The timing sets as the re-check uses them: one at a time on the device, and which of each set's inputs
    are scaled, worked out there once, as the child does (on the judge's CPU, the whole-number check of a 1 GiB
    input took over a second).

    Only the set last used is kept on the device. The re-check's reference run and float64 oracle need room
    beside the candidate's child, which holds every set and the kept outputs; with KernelBench's 6 GiB softmax
    sets, keeping all three placed would leave the oracle too little and send it to the host, tens of seconds
    slower. Placing a set again costs one copy from pinned memory (0.12 s for 6 GiB on an H200)."""

    def __init__(self, sets: list[list[Any]], device: torch.device) -> None:
        self.sets, self.device = sets, device
        self._which: dict[int, list[bool]] = {}
        self._placed: tuple[int, list[Any]] | None = None

    @property
    def count(self) -> int:
        return len(self.sets)

    def rep_inputs(self, set_index: int, step: int) -> list[Any]:
        """A re-checked rep's inputs, bit for bit the child's."""
        values = self.on_device(set_index)
        if set_index not in self._which:
            self._which[set_index] = [timing.scalable(v) for v in values]
        return timing.scaled_inputs(values, step, self._which[set_index])

    def on_device(self, set_index: int) -> list[Any]:
        if self._placed is None or self._placed[0] != set_index:
            self._placed = None  # let go of the last set before the next one comes
            self._placed = set_index, to_device(self.sets[set_index], self.device)
        return self._placed[1]


def _load_timed(path: Path, device: torch.device, output_bytes: int) -> Any:
    """The file's entry, its outputs read as a checked call's are (device_room.read_outputs)."""
    try:
        loaded = read_outputs(path, device, output_bytes)
        tensorfile.remove(path)
        return loaded
    except (OSError, tensorfile.TensorFileError) as exc:
        raise _wrong(f"a timed output the harness reported is missing or unreadable: {exc}") from None


def _timed_entry(entry: Any, sets: int) -> tuple[int, int, int, list[Any]]:
    """[set, scale step, rep, *outputs] as the child wrote it; anything else is a wrong timed output."""
    if (isinstance(entry, list) and len(entry) >= 3 and all(isinstance(v, int) for v in entry[:3])
            and 0 <= entry[0] < sets and 0 <= entry[1] <= timing.SCALE_STEPS):
        return entry[0], entry[1], entry[2], entry[3:]
    raise _wrong("the timed outputs were not in the harness's form")


def _wrong(message: str) -> Verdicted:
    return Verdicted(Failure(Stage.TIMING, "timed_output_wrong", message))
