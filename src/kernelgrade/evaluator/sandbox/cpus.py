"""Which cores a child runs on: a thread's CPU affinity is what the processes it starts inherit.

Linux keeps an affinity mask per thread, and a child started from a thread begins with that thread's mask, so
setting the calling thread's mask around the start places the child without a preexec_fn (unsafe in the
judge's threaded process) and without touching the judge's other threads. The judge's measurements and the
run child go on cores of their own; builds go on the rest (worker/cores.py plans which). A child started ahead
of its job, elsewhere, is moved onto the job's cores when the job takes it (place_tree).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

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


def here() -> tuple[int, ...]:
    """The CPUs the calling thread may run on; empty where the host does not say."""
    return tuple(sorted(_current()))


def place_tree(pid: int, cpus: Sequence[int]) -> bool:
    """Moves every thread of process `pid` and of its descendants onto `cpus` (a sandboxed child is bwrap's
    descendant, and its interpreter's threads keep the mask they were made with). False where a thread could
    not be moved; never raises: placement is an optimisation."""
    if not cpus:
        return True
    refused: list[str] = []
    for thread in [t for process in [pid, *_descendants(pid)] for t in _threads(process)]:
        try:
            os.sched_setaffinity(thread, set(cpus))
        except ProcessLookupError:  # it ended meanwhile
            continue
        except OSError as exc:
            refused.append(f"{thread} ({exc.strerror})")
    if refused:
        log.warning("could not move threads %s of child %d onto cores %s", ", ".join(refused[:8]), pid, sorted(cpus))
    return not refused


def _threads(pid: int) -> list[int]:
    try:
        return [int(entry.name) for entry in Path(f"/proc/{pid}/task").iterdir()]
    except OSError:
        return []


def _descendants(pid: int) -> list[int]:
    """Children of `pid`, their children, and so on."""
    found, frontier = [], [pid]
    while frontier:
        children = [c for p in frontier for c in _children(p)]
        found += children
        frontier = children
    return found


def _children(pid: int) -> list[int]:
    """From each thread's /proc children list; where the kernel keeps none, from every process's parent id."""
    tasks = _threads(pid)
    try:
        return [int(c) for t in tasks for c in Path(f"/proc/{pid}/task/{t}/children").read_text().split()]
    except FileNotFoundError:
        return children_by_parent(pid)
    except (OSError, ValueError):
        return []


def children_by_parent(pid: int) -> list[int]:
    """The processes whose parent id is `pid`, from every process /proc shows."""
    return [int(e.name) for e in Path("/proc").iterdir() if e.name.isdigit() and _parent(e) == pid]


def _parent(proc: Path) -> int | None:
    """The parent id in /proc/PID/stat, read after the command name (which may hold spaces and parentheses)."""
    try:
        fields = (proc / "stat").read_text().rpartition(")")[2].split()
        return int(fields[1])
    except (OSError, IndexError, ValueError):
        return None


@contextmanager
def on_one_cpu(pids: Sequence[int]) -> Iterator[int | None]:
    """The trees of processes `pids` (run children taken for this job, on the calling thread's cores) on one of
    those cores inside the block, the last; back on all of them after. Yields that core (None where the host does
    not say which cores there are: nothing moves).

    A call whose time is host dispatch runs at the speed of the CPU its process is on, and that speed moves: on
    an H100 host, two processes taking turns call by call on KernelBench's LSTM were within 1 % of each other over
    every 2 s window on the same single CPU, and up to 29 % apart on two different CPUs (docs/timing.md,
    "Host-bound calls"). Threads started inside the block keep the one core until the block ends."""
    spread = here()
    if not spread:
        yield None
        return
    for pid in pids:
        place_tree(pid, spread[-1:])
    try:
        yield spread[-1]
    finally:
        for pid in pids:
            place_tree(pid, spread)
