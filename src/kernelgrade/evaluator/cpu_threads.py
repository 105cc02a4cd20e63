"""torch's CPU thread pool sized to the cores a process works on, where those are fewer than it started with.

torch sizes its OpenMP pool to the CPUs a process may use when the pool starts. A warm run child starts on the
cores set aside for builds and moves onto its judge's few cores when a job takes it (sandbox/cpus.py,
place_tree); a GPU judge's threads run on their own cores (worker/cores.py). Left as it was, a pool of a dozen
threads shares two cores: each parallel operation waits at its barrier for threads that wait for a CPU. On a
2-core host a 1 GiB copy took 2.7 s with two threads on one core, 0.44 s with one. On an H200 host the run
child's load of KernelBench's 55_Matmul_MaxPool_Sum_Scale (4 GiB of weights) took 3.8-4.0 s, and 1.6 s once
sized to its cores; the reference's timing child 3.4-3.7 s, then 1.2-1.3 s.
"""

from __future__ import annotations

import os

import torch


def fit_to(cpus: int) -> None:
    """At most `cpus` threads from here on (never more than torch had: OMP_NUM_THREADS still caps it)."""
    if 0 < cpus < torch.get_num_threads():
        torch.set_num_threads(cpus)


def fit_to_affinity() -> None:
    """At most as many threads as the CPUs the calling thread may run on now."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except OSError:
        return
    fit_to(cpus)
