"""Work dirs removed, and ended children's shared regions closed, off the judge's path, one at a time in a thread
of their own.

An evaluation's dir holds its timing sets, and those of KernelBench's largest problems take gigabytes: on an
H200 host (ext4 mounted with discard), removing 18-24 GiB of them took 4-7 s per evaluation, at its end, where
the judge's next evaluation waited. A run child's shared region is alike: closing softmax's 12 GiB (unregistered
from CUDA, unmapped, its file's pages freed) took about 2 s of each evaluation's `child_end` there. What is handed
over here is what nothing will use again (a finished job's dir, a discarded child's, the region of a child that
was killed). At most PENDING_MOST wait: a judge that hands them over faster than they go waits for the oldest,
so that the disk and memory never hold more than a few evaluations' worth. The thread finishes what waits before
the process exits (concurrent.futures joins it).
"""

from __future__ import annotations

import shutil
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Protocol

# Dirs and regions waiting at most, per process: an evaluation hands over two or three dirs (its own, its run
# child's, a reference child's) and a region, so this is a few evaluations' worth.
PENDING_MOST = 8


class Closeable(Protocol):
    def close(self) -> None: ...


class Removals:
    def __init__(self, pending_most: int = PENDING_MOST) -> None:
        self._slots = threading.BoundedSemaphore(pending_most)
        self._pool = ThreadPoolExecutor(1, thread_name_prefix="removals")

    def remove(self, path: Path) -> None:
        """Removes `path` (a dir, with all it holds) soon; waits first while PENDING_MOST others wait."""
        self._later(lambda: shutil.rmtree(path, ignore_errors=True))

    def close(self, closeable: Closeable) -> None:
        """Closes `closeable` (an ended child's shared region) soon, as `remove` removes a dir."""
        self._later(closeable.close)

    def wait(self) -> None:
        """Returns once everything handed over before the call is done."""
        self._pool.submit(lambda: None).result()

    def _later(self, act: Callable[[], None]) -> None:
        self._slots.acquire()
        self._pool.submit(self._done, act)

    def _done(self, act: Callable[[], None]) -> None:
        try:
            act()
        finally:
            self._slots.release()


_REMOVALS: Removals | None = None
_MADE = threading.Lock()


def removals() -> Removals:
    """This process's removals, made at the first call."""
    global _REMOVALS
    with _MADE:
        if _REMOVALS is None:
            _REMOVALS = Removals()
        return _REMOVALS
