"""Work dirs removed off the judge's path, one at a time in a thread of their own.

An evaluation's dir holds its timing sets, and those of KernelBench's largest problems take gigabytes: on an
H200 host (ext4 mounted with discard), removing 18-24 GiB of them took 4-7 s per evaluation, at its end, where
the judge's next evaluation waited. A dir handed over here is one nothing will use again (a finished job's, a
discarded child's). At most PENDING_MOST wait: a judge that makes them faster than they go waits for the oldest,
so that the disk never holds more than a few evaluations' files. The thread finishes what waits before the
process exits (concurrent.futures joins it).
"""

from __future__ import annotations

import shutil
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

# Dirs waiting for removal at most, per process: an evaluation hands over two or three (its own, its run child's,
# a reference child's), so this is a few evaluations' worth.
PENDING_MOST = 8


class Removals:
    def __init__(self, pending_most: int = PENDING_MOST) -> None:
        self._slots = threading.BoundedSemaphore(pending_most)
        self._pool = ThreadPoolExecutor(1, thread_name_prefix="removals")

    def remove(self, path: Path) -> None:
        """Removes `path` (a dir, with all it holds) soon; waits first while PENDING_MOST others wait."""
        self._slots.acquire()
        self._pool.submit(self._removed, path)

    def wait(self) -> None:
        """Returns once every dir handed over before the call is gone."""
        self._pool.submit(lambda: None).result()

    def _removed(self, path: Path) -> None:
        try:
            shutil.rmtree(path, ignore_errors=True)
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
