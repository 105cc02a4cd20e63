"""Which cores a child runs on: a thread's CPU affinity is what the processes it starts inherit.

Linux keeps an affinity mask per thread, and a child started from a thread begins with that thread's mask, so
setting the calling thread's mask around the start places the child without a preexec_fn (unsafe in the
judge's threaded process) and without touching the judge's other threads. The judge's measurements and the
run child go on cores of their own; builds go on the rest (worker/cores.py plans which).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

log = logging.getLogger(__name__)


@contextmanager
def on_cpus(cpus: Sequence[int]) -> Iterator[None]:
    """The calling thread runs on `cpus` inside the block (nothing changes for an empty sequence, or where the
    host refuses the mask: placement is an optimisation, never a reason to fail a job)."""
    if not cpus:
        yield
        return
    before = _current()
    placed = _place(set(cpus))
    try:
        yield
    finally:
        if placed and before:
            _place(before)


def _current() -> set[int]:
    try:
        return set(os.sched_getaffinity(0))
    except OSError:
        return set()


def _place(cpus: set[int]) -> bool:
    try:
        os.sched_setaffinity(0, cpus)
    except OSError as exc:
        log.warning("could not place this thread on cores %s: %s", sorted(cpus), exc)
        return False
    return True
