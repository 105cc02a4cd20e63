"""The run child's own threads: how many there are, and whether those that appeared since load have gone quiet.

A checked call's outputs are fingerprinted when forward() returns and again after a settle (docs/threats.md 2).
A thread that finishes an output late shows up only if it runs during the settle, and on a busy host a
runnable thread can wait for a CPU longer than the settle lasts: with outputs copied into shared memory in
microseconds, such a thread wrote nothing before the last fingerprint and the late output passed for a wrong
one. So after the settle the child also waits, within a bound, until every thread that appeared since load
has spent a whole step off the CPU: not runnable, and no CPU time gained. A thread waiting for Python's GIL
gets it during that step, since the child's own thread sleeps through it.

Read from /proc/self/task: `stat` for the state, `schedstat` for CPU time in nanoseconds (`stat`'s clock
ticks are 10 ms, longer than a thread's write).
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable
from dataclasses import dataclass

# Captured at import, before the submission is imported (as timing.py does with its clocks).
_listdir = os.listdir
_perf_counter = time.perf_counter
_sleep = time.sleep

_TASKS = "/proc/self/task"
# Longer than the 2 ms a thread may sleep between the parts it writes, so that a writer gains CPU time
# within every step; short enough that a thread pool's spin after its work (about 10 ms for OpenMP's
# on a CPU host) ends the wait after a few steps.
QUIET_STEP_S = 0.005


@dataclass(frozen=True)
class ThreadClock:
    runnable: bool  # running or waiting for a CPU
    cpu_ns: int


def thread_ids() -> frozenset[str]:
    """Every thread of this process, C++ ones included (threading.enumerate sees only Python's)."""
    try:
        return frozenset(_listdir(_TASKS))
    except OSError:
        return frozenset()


def os_threads() -> int:
    return len(thread_ids())


def clocks(tids: Iterable[str]) -> dict[str, ThreadClock]:
    """The state and CPU time of each thread still alive; one that ended is left out."""
    found = {}
    for tid in tids:
        try:
            with open(f"{_TASKS}/{tid}/stat") as stat, open(f"{_TASKS}/{tid}/schedstat") as schedstat:
                state = stat.read().rsplit(")", 1)[1].split()[0]
                found[tid] = ThreadClock(state == "R", int(schedstat.read().split()[0]))
        except (OSError, IndexError, ValueError):
            continue
    return found


def wait_quiet(known: frozenset[str], budget_s: float) -> bool:
    """Wait until every thread not in `known` has ended or stayed off the CPU through a whole step, or the
    budget is spent (False: some thread was still running)."""
    deadline = _perf_counter() + budget_s
    last = clocks(thread_ids() - known)
    while last:
        if _perf_counter() >= deadline:
            return False
        _sleep(QUIET_STEP_S)
        now = clocks(thread_ids() - known)
        if all(not c.runnable and last.get(tid) == c for tid, c in now.items()):
            return True
        last = now
    return True
