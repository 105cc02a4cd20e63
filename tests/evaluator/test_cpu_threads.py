"""torch's CPU pool sized to the cores a process is placed on (evaluator/cpu_threads.py)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

SCRIPT = """
import os, sys, torch
torch.ones(1 << 20).add_(1).sum()  # the pool started on every CPU the process had
before = torch.get_num_threads()
for task in os.listdir("/proc/self/task"):  # moved, as the judge moves a warm child (place_tree)
    os.sched_setaffinity(int(task), {min(os.sched_getaffinity(0))})
from kernelgrade.evaluator.cpu_threads import fit_to, fit_to_affinity
fit_to_affinity()
placed = torch.get_num_threads()
fit_to(8)
print(before, placed, torch.get_num_threads())
"""


def _run(env: dict[str, str]) -> list[int]:
    out = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, check=True,
                         env={**os.environ, **env})
    return [int(v) for v in out.stdout.split()]


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs two CPUs to move from")
def test_a_process_moved_onto_one_cpu_uses_one_thread_and_never_grows_again() -> None:
    before, placed, after = _run({"OMP_NUM_THREADS": "2"})
    assert (before, placed, after) == (2, 1, 1)


def test_the_operators_thread_limit_stays_when_the_cores_are_more() -> None:
    before, placed, after = _run({"OMP_NUM_THREADS": "1"})
    assert (before, placed, after) == (1, 1, 1)
