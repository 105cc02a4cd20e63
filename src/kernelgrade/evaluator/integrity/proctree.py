"""The judge's own count of the run child's threads and processes, read from /proc (docs/threats.md 2).

The child also counts its threads, but that is the submission's process reporting on itself; this count
comes from outside. It covers the whole tree under the launched process (a sandbox wrapper, the harness,
and anything they started), so a baseline taken after loading is compared with later counts.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

PROC = Path("/proc")
# Bounds the walk if the tree is a fork bomb the sandbox has not stopped yet.
MAX_PROCESSES = 4096


@dataclass(frozen=True)
class TreeCount:
    processes: int
    threads: int


def count_tree(root_pid: int, proc: Path = PROC) -> TreeCount | None:
    """Processes and threads in the tree rooted at root_pid; None where /proc cannot show it."""
    tree = _walk(root_pid, proc)
    return None if tree is None else TreeCount(len(tree), sum(len(tasks) for tasks in tree.values()))


def tree_waited_ns(root_pid: int, proc: Path = PROC) -> int | None:
    """How long the tree's threads have waited, together, for a CPU while ready to run (each thread's
    schedstat run-queue delay); None where /proc cannot show it. The judge's own reading, around a timed phase,
    of what the child reports per rep (crosscheck.wall_gaps)."""
    tree = _walk(root_pid, proc)
    if tree is None:
        return None
    return sum(_waited(proc / str(pid) / "task" / tid) for pid, tasks in tree.items() for tid in tasks)


def _walk(root_pid: int, proc: Path) -> dict[int, list[str]] | None:
    """Each process of the tree with its thread ids; None where the root cannot be read."""
    pending, seen = [root_pid], dict[int, list[str]]()
    while pending and len(seen) < MAX_PROCESSES:
        pid = pending.pop()
        if pid in seen:
            continue
        tasks = _tasks(proc, pid)
        if tasks is None:
            if pid == root_pid:
                return None
            continue  # exited while we looked
        seen[pid] = tasks
        pending.extend(_children(proc, pid, tasks))
    return seen


def _waited(task: Path) -> int:
    try:
        return int((task / "schedstat").read_text().split()[1])
    except (OSError, IndexError, ValueError):
        return 0  # exited while we looked, or a kernel that keeps no schedstat


def _tasks(proc: Path, pid: int) -> list[str] | None:
    try:
        return [t.name for t in (proc / str(pid) / "task").iterdir()]
    except OSError:
        return None


def _children(proc: Path, pid: int, tasks: list[str]) -> list[int]:
    """Children of every thread of pid (a process's children hang off the thread that forked them)."""
    found: list[int] = []
    for tid in tasks:
        try:
            text = (proc / str(pid) / "task" / tid / "children").read_text()
        except OSError:
            continue
        found.extend(int(c) for c in text.split())
    return found
