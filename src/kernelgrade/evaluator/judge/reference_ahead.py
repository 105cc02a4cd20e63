"""The reference's run child, loaded while the candidate's last correctness trials run.

Loading the reference in its child is the seeded construction of its weights on the CPU and their copy to the
device: 0.4-1.0 s for a KernelBench level 2 GEMM on an H200, 7-8 s for 55_Matmul_MaxPool_Sum_Scale (4 GiB of
weights). Loaded at the start of the timing stage, that was device time of every verdict whose problem's child
was not kept. A candidate that passes its first trial nearly always reaches timing, so from then on the load runs
beside its remaining trials, in the other child; correctness is not a measurement, so nothing timed shares the
device with it. A candidate that fails its first trial costs no spare and no load.

Given the sets' files (on a GPU: pipeline.py), the child once loaded reads the evaluation's timing sets as well, as
soon as the judge has written them: read at timing, that was its first warm-up's copy of every set through a file
and onto the device (384 MiB for the seed problems), in the verdict's device time. Its warm-ups keep sets read
from the same files (child/run_child.py, on a GPU only).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import torch

from kernelgrade.evaluator.host.reference import Footprint, Reference
from kernelgrade.evaluator.host.run_children import ChildKind, RunChildren
from kernelgrade.evaluator.host.session import StageFailed
from kernelgrade.evaluator.judge.reference_child import ReferenceChild, child_key
from kernelgrade.evaluator.request import Limits
from kernelgrade.evaluator.wire import tensorfile

log = logging.getLogger(__name__)

# A child loaded ahead holds the reference's weights on the device beside the candidate's child and the trials the
# judge makes, which the judge's budgets (an eighth of the card each for kept references and a trial made ahead)
# leave room for, but not for much more: only weights within a sixteenth of the card load ahead (5 GiB of an
# H100, which takes in 55_Matmul's 4 GiB); larger ones load at timing, once the trials are let go. The timing sets
# the child reads ahead count against the same share.
WEIGHTS_SHARE = 16


class ReferenceAhead:
    """The reference's child for one evaluation's timing stage, taken and loaded in the background once `start`
    is called. Close it: a child loaded for an evaluation that ended before timing is closed as a timed one is
    (kept for the next evaluation of its problem where it may be)."""

    def __init__(self, children: RunChildren, kind: ChildKind, reference: Reference, seed: int, limits: Limits,
                 sets: Callable[[], Sequence[Path]] | None = None) -> None:
        """`sets`: the evaluation's timing set files once written (none where it will not be timed), for the child
        to read ahead; None: the child reads them at timing."""
        self._children, self._kind, self._reference, self._seed, self._limits = children, kind, reference, seed, limits
        self._sets = sets
        self._pool: ThreadPoolExecutor | None = None
        self._loading: Future[ReferenceChild | None] | None = None
        self._passed_over = ""  # why the reference was not loaded ahead, where it was not

    def start(self) -> None:
        """Takes a spare, ready now or once one already starting is, and loads the reference in it, both in the
        background. Nothing is started where the judge keeps this problem's child loaded already or where the
        weights are too large to hold beside the candidate (WEIGHTS_SHARE); no spare is started here (the timing
        stage starts one where none was ready or starting, as before: one started here would end with the
        loading thread)."""
        if self._pool is not None or self._children.keeps(child_key(self._reference, self._seed, self._kind)):
            return
        if not _fits_beside(self._reference, 0):
            self._passed_over = f"its weights take more than 1/{WEIGHTS_SHARE} of the device"
            return
        self._pool = ThreadPoolExecutor(1, thread_name_prefix="reference-ahead")
        self._loading = self._pool.submit(self._load)

    def _load(self) -> ReferenceChild | None:
        spare = self._children.take_spare(self._kind)
        if spare is None:
            return None
        child = ReferenceChild.started(self._children, self._kind, self._reference, self._seed, self._limits, spare)
        try:
            child.how = "loaded ahead" + self._read_ahead(child)
        except BaseException:
            child.close(failed=True)
            raise
        return child

    def _read_ahead(self, child: ReferenceChild) -> str:
        """Has `child` read the timing sets once they are written, where they fit beside the candidate with the
        weights; what the child's description adds."""
        paths = list(self._sets()) if self._sets is not None else []
        if not paths:
            return ""
        if not _fits_beside(self._reference, sum(tensorfile.size(path) for path in paths)):
            return f"; timing sets read at timing: with the weights they take more than 1/{WEIGHTS_SHARE} of the device"
        child.read_ahead(paths)
        return ", timing sets read ahead"

    def child(self) -> ReferenceChild | None:
        """The child loaded ahead, once its load has ended, for the caller to close; None where none was started
        or where its load failed (the child is gone and its spare replaced): loaded beside the candidate's trials,
        it may have lacked room that the timing stage has, so the caller loads one itself as it would have."""
        loading, self._loading = self._loading, None
        if loading is None:
            return None
        try:
            child = loading.result()
        except StageFailed as failed:
            log.warning("the reference's child loaded ahead failed, so it is loaded again for timing: %s",
                        failed.failure.message)
            self._passed_over = "its load beside the trials failed"
            return None
        if child is None:
            self._passed_over = "no spare child was ready or starting once the first trial had passed"
            return None
        return child

    def described(self, child: ReferenceChild) -> str:
        """How `child` came to hold the reference, with why it was not loaded ahead where it was loaded at
        timing: what the result's extra says."""
        return f"{child.how}: {self._passed_over}" if child.how == "loaded" and self._passed_over else child.how

    def close(self) -> None:
        """Closes a child loaded ahead that the timing stage did not take, and ends the loading thread. A load
        under way is waited for: left running, it could share the device with the next evaluation's measurement.
        How an unused load ended is no part of the evaluation's outcome."""
        try:
            unused = self.child()
            if unused is not None:
                unused.close()
        except Exception:
            log.warning("the reference's child loaded ahead could not be closed", exc_info=True)
        if self._pool is not None:
            self._pool.shutdown(wait=True)


def _fits_beside(reference: Reference, set_bytes: int) -> bool:
    """Whether the reference's weights and `set_bytes` of timing sets are within WEIGHTS_SHARE of its device."""
    device = reference.device
    if device.type != "cuda":
        return True
    weights = Footprint.of([*reference.model.parameters(), *reference.model.buffers()])
    return weights.device + set_bytes <= torch.cuda.get_device_properties(device).total_memory // WEIGHTS_SHARE
