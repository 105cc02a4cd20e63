"""The lock of a GPU that several judges grade on: each holds it shared while it works on the device, alone while it
measures. A GPU with one judge has none: its quiet lock (run_children.py) is enough.

A GPU can grade two evaluations at once (KERNELGRADE_JUDGES_PER_GPU): most of an evaluation is not a measurement
(the candidate's correctness calls, the trials the judge makes and compares, run children loading), and it leaves
the device idle between its steps. Nothing of another evaluation may run on the device while one is timed: so an
evaluation holds the lock shared from its first device work to its last, and lets go of it for the lock alone
around each timed phase (the timing stage, a torch.compile baseline, a problem's timing distribution). A
measurement waits for the others' device work to reach a pause; theirs waits, in turn, for it to end.

A spare run child's device warm-up holds it shared beside the others (`beside`): an evaluation holding it may be
waiting for that spare, so the spare must not queue behind a measurement that waits for the evaluation.

It is an flock on a file named for the device's UUID, in the host lock's folder, so judges in other processes
(and other servers of the host) that grade on the same GPU see it, and the kernel lets go of it with a process
that dies holding it.
"""

from __future__ import annotations

import fcntl
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path

from kernelgrade.evaluator.host.host_lock import HostLock

# How often a waiter tries again; a measurement waits for the other evaluation's device work to pause, and that
# one for the measurement to end, a few times per verdict: a hand-over is worth half of this on average.
POLL_S = 0.002


class DeviceLock:
    """One judge's hold on its device's lock: used from the judge's evaluation thread alone (its spares take
    their own holds, `beside`)."""

    def __init__(self, path: Path) -> None:
        self.lock = HostLock(path, POLL_S)
        self._shared: int | None = None  # the descriptor of this judge's shared hold, while it holds one
        self._holding = False

    @property
    def path(self) -> Path:
        return self.lock.path

    @contextmanager
    def using(self) -> Iterator[None]:
        """Held shared while this judge works on the device outside its measurements; nested, the outer hold
        stands."""
        if self._holding:
            yield
            return
        self._shared, self._holding = self.lock.acquire(fcntl.LOCK_SH, "using the device"), True
        try:
            yield
        finally:
            self.lock.release(self._shared)
            self._shared, self._holding = None, False

    @contextmanager
    def alone(self) -> Iterator[None]:
        """Held alone while this judge measures: the judge's own shared hold, where it has one, is let go of for
        the while (the other judges wait for it as for any other holder) and taken again after."""
        holding = self._holding
        if holding:
            self.lock.release(self._shared)
            self._shared = None
        try:
            with self.lock.held():
                yield
        finally:
            if holding:
                self._shared = self.lock.acquire(fcntl.LOCK_SH, "using the device")

    def beside(self) -> AbstractContextManager[None]:
        """Held shared by a spare's device warm-up, without passing the gate (module docstring)."""
        return self.lock.beside()


def device_lock_path(host_lock: Path, device_uuid: str) -> Path:
    """The lock file of the GPU with `device_uuid`, beside the host lock's."""
    return host_lock.with_name(f"kernelgrade-gpu-{device_uuid}.lock")
