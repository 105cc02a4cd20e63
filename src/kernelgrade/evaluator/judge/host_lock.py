"""A lock every judge of a host shares, held around CPU measurements and what would compete with them.

A judge's own quiet lock (run_children.py) keeps its spares from starting while it times a CPU problem, but
judges in other processes on the same host (`kernelgrade worker` started twice, say) never see it: one's run
child starting (seconds of importing torch, on whatever core it gets) runs beside the other's timed reps.
This lock is an flock on a file that all of them open, so the kernel lets it go with a process that dies
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
# up to three times, 120 s each; a torch.compile baseline that compiles for minutes can hold it longer, and is
# rare). Past that the holder is taken to be stuck and the waiter goes on without the lock: a lock between
# processes must never stop grading.
WAIT_S = 600.0
# How often a waiter tries again; flock has no timed wait. A few tries per typical CPU timing phase.
POLL_S = 0.02


class HostLock:
    def __init__(self, path: Path) -> None:
        self.path = path

    @contextmanager
    def held(self) -> Iterator[None]:
        """Holds the lock (waiting for it), or goes on without it after WAIT_S."""
        fd = os.open(self.path, os.O_RDONLY | os.O_CREAT, 0o666)
        try:
            if not _take(fd):
                log.warning("the host lock %s was held for over %.0f s; measuring without it", self.path, WAIT_S)
            yield
        finally:
            os.close(fd)  # releases the lock with the descriptor


def _take(fd: int) -> bool:
    deadline = time.monotonic() + WAIT_S
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            if time.monotonic() >= deadline:
                return False
            time.sleep(POLL_S)
