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
    pending, seen, threads = [root_pid], set[int](), 0
    while pending and len(seen) < MAX_PROCESSES:
        pid = pending.pop()
        if pid in seen:
            continue
        tasks = _tasks(proc, pid)
        if tasks is None:
            if pid == root_pid:
                return None
            continue  # exited while we looked
        seen.add(pid)
        threads += len(tasks)
        pending.extend(_children(proc, pid, tasks))
    return TreeCount(len(seen), threads)


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
