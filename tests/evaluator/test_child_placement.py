"""Where run children run: a GPU judge's spares start away from its measurement cores, and the one a job takes
moves, every thread of it and of its descendants, onto the job's cores."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from kernelgrade.evaluator.host.run_children import RunChildren
from kernelgrade.evaluator.sandbox.cpus import children_by_parent, on_cpus, place_tree
from kernelgrade.evaluator.sandbox.launcher import SubprocessLauncher
from tests.evaluator.test_warm import GPU_LIKE

CPUS = sorted(os.sched_getaffinity(0))
pytestmark = pytest.mark.skipif(len(CPUS) < 2, reason="needs two CPUs to tell placements apart")
FIRST, LAST = CPUS[0], CPUS[-1]
# A process with a thread of its own and a child process with one too, all sleeping.
TREE = """
import subprocess, sys, threading, time
threading.Thread(target=time.sleep, args=(60,), daemon=True).start()
child = subprocess.Popen([sys.executable, "-c", "import threading, time; "
                          "threading.Thread(target=time.sleep, args=(60,), daemon=True).start(); time.sleep(60)"])
print(child.pid, flush=True)
time.sleep(60)
"""


def allowed(pid: int) -> set[frozenset[int]]:
    """The CPU sets of every thread of `pid`."""
    return {frozenset(os.sched_getaffinity(int(t.name))) for t in Path(f"/proc/{pid}/task").iterdir()}


@pytest.fixture
def tree() -> Iterator[tuple[int, int]]:
    with on_cpus([FIRST]):
        proc = subprocess.Popen([sys.executable, "-c", TREE], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        child = int(proc.stdout.readline())
        deadline = time.monotonic() + 10
        while len(list(Path(f"/proc/{child}/task").iterdir())) < 2:  # its thread started
            assert time.monotonic() < deadline
            time.sleep(0.05)
        yield proc.pid, child
    finally:
        subprocess.run(["pkill", "-P", str(proc.pid)], check=False)
        proc.kill()
        proc.wait()


def test_every_thread_of_a_process_and_of_its_descendants_is_moved(tree: tuple[int, int]) -> None:
    parent, child = tree
    assert allowed(parent) == allowed(child) == {frozenset([FIRST])}
    assert place_tree(parent, [LAST])
    assert allowed(parent) == allowed(child) == {frozenset([LAST])}


def test_children_are_found_from_parent_ids_where_the_kernel_lists_none(tree: tuple[int, int]) -> None:
    parent, child = tree
    assert children_by_parent(parent) == [child]


def test_a_process_that_is_gone_is_nothing_to_move() -> None:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    assert place_tree(proc.pid, [LAST])


def test_a_spare_starts_on_the_spare_cores_and_moves_to_the_taking_thread_s(tmp_path: Path) -> None:
    children = RunChildren(SubprocessLauncher(), tmp_path, spares=1, spare_cpus=(FIRST,))
    try:
        with on_cpus([LAST]):
            children.take(GPU_LIKE).close()  # started on demand, here; a spare starts behind it
        deadline = time.monotonic() + 60
        while children.ready(GPU_LIKE) == 0:
            assert time.monotonic() < deadline, "no spare became ready"
            time.sleep(0.1)
        spare = children._ready[GPU_LIKE][0]
        assert allowed(spare.child.proc.pid) == {frozenset([FIRST])}
        with on_cpus([LAST]):
            taken = children.take(GPU_LIKE)
        assert taken is spare and allowed(taken.child.proc.pid) == {frozenset([LAST])}
        taken.close()
    finally:
        children.close()
