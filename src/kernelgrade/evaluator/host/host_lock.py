"""A lock every judge of a host shares, held around CPU measurements and what would compete with them.

A judge's own quiet lock (run_children.py) keeps its spares from starting while it times a CPU problem, but
judges in other processes on the same host (`kernelgrade worker` started twice, say) never see it: one's run
child starting (seconds of importing torch, on whatever core it gets) runs beside the other's timed reps. So
does a build: a pool's compile-ahead starts none while one of its judges times a CPU problem, but a build
already running went on through the measurement (a C++ build takes both cores of a 2-core host for 20 s), as
did another judge's own compile stage. Measurements hold the lock alone; builds and CPU children's starts hold
it shared. It is an flock on a file that all of them open, so the kernel lets it go with a process that dies
holding it.
"""

from __future__ import annotations

import fcntl
import logging
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

log = logging.getLogger(__name__)

# The longest a holder keeps it: a whole CPU timing stage at its limits (the reference twice and the candidate
# up to three times, 120 s each), or a build at its limit (Limits.compile_s, 300 s, a third more for a lean CUDA
# build); a torch.compile baseline that compiles for minutes can hold it longer, and is rare. Past that the
# holder is taken to be stuck and the waiter goes on without the lock: a lock between processes must never
# stop grading.
WAIT_S = 600.0
# How often a waiter tries again; flock has no timed wait. A few tries per typical CPU timing phase.
POLL_S = 0.02


class HostLock:
    """A measurement holds it alone (held()); what would compete with one, a build or a CPU run child's start,
    holds it shared with the others of its kind (shared()). A measurement waiting for it keeps newcomers out
    meanwhile: both kinds pass a gate file first, and the measurement stays in the gate until it has the lock,
    so builds that overlap one another cannot hold it off."""

    def __init__(self, path: Path, poll_s: float = POLL_S) -> None:
        """`poll_s`: how often a waiter tries again."""
        self.path, self.poll_s = path, poll_s
        self.gate = path.with_name(path.name + ".gate")

    @contextmanager
    def held(self) -> Iterator[None]:
        """Holds the lock alone (waiting for every holder), or goes on without it after WAIT_S."""
        with self._taken(fcntl.LOCK_EX, "measuring"):
            yield

    @contextmanager
    def shared(self) -> Iterator[None]:
        """Holds the lock beside other shared holders (waiting for a measurement), or goes on without it after
        WAIT_S."""
        with self._taken(fcntl.LOCK_SH, "going on"):
            yield

    @contextmanager
    def held_if_free(self) -> Iterator[bool]:
        """Holds the lock alone where nothing holds it or waits at the gate now, and yields whether it does. Never
        waits, and never keeps builds out meanwhile: for measurements that can be left for later (a problem's
        preparation, judge/prepare.py)."""
        try:
            fd = _open(self.path)
        except OSError:
            yield False
            return
        try:
            yield self._through_gate(fd, fcntl.LOCK_EX, wait_s=0.0)
        finally:
            os.close(fd)

    def acquire(self, mode: int, without: str) -> int | None:
        """Takes the lock (`mode`: fcntl.LOCK_EX or LOCK_SH) through the gate and returns the descriptor that
        holds it, for release(); None where the file cannot be opened. Past WAIT_S it goes on `without` it,
        holding the descriptor all the same."""
        try:
            fd = _open(self.path)
        except OSError as exc:  # an unusable lock path must not stop grading either
            log.warning("could not open the lock %s (%s); %s without it", self.path, exc, without)
            return None
        if not self._through_gate(fd, mode, WAIT_S):
            log.warning("the lock %s was held for over %.0f s; %s without it", self.path, WAIT_S, without)
        return fd

    @staticmethod
    def release(fd: int | None) -> None:
        if fd is not None:
            os.close(fd)  # releases the lock with the descriptor

    @contextmanager
    def beside(self) -> Iterator[None]:
        """Holds the lock shared without passing the gate: waits only while another holds it alone, never for
        one waiting at the gate. For what a holder of the lock may wait for (device_lock.py), which would
        otherwise wait behind a waiter that waits for that holder."""
        try:
            fd = _open(self.path)
        except OSError:
            yield
            return
        try:
            _take(fd, fcntl.LOCK_SH, time.monotonic() + WAIT_S, self.poll_s)
            yield
        finally:
            os.close(fd)

    @contextmanager
    def _taken(self, mode: int, without: str) -> Iterator[None]:
        fd = self.acquire(mode, without)
        try:
            yield
        finally:
            self.release(fd)

    def _through_gate(self, fd: int, mode: int, wait_s: float) -> bool:
        deadline = time.monotonic() + wait_s
        try:
            gate = _open(self.gate)
        except OSError:  # a lock file made by hand where no gate can be: no fairness, but the lock still
            return _take(fd, mode, deadline, self.poll_s)
        try:
            return _take(gate, fcntl.LOCK_EX, deadline, self.poll_s) and _take(fd, mode, deadline, self.poll_s)
        finally:
            os.close(gate)  # lets the next one through the gate


def _open(path: Path) -> int:
    return os.open(path, os.O_RDONLY | os.O_CREAT, 0o666)


def _take(fd: int, mode: int, deadline: float, poll_s: float) -> bool:
    while True:
        try:
            fcntl.flock(fd, mode | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            if time.monotonic() >= deadline:
                return False
            time.sleep(poll_s)
