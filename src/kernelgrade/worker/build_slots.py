"""How many submissions the compile-ahead builds at once, and how many compiler processes each may run.

A load_inline build is at most a few translation units: the generated main.cpp (which parses
torch/extension.h, about 15-18 s of one core) and, for CUDA, cuda.cu, whose nvcc phases (cudafe++, cicc,
host g++) run one after another on one core for about a minute. So a build needs at most two cores at its
peak however large its MAX_JOBS, and concurrency, not ninja's -j, is what fills a many-core host.

Imports nothing but the evaluator: bench/build_speed.py uses it on a GPU host that has torch and nothing else.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from kernelgrade.evaluator.host.environment import MEMINFO, mem_available

# The fewest cores left to each GPU judge: one for the timing loop's host thread, one for the run child's own
# threads (CUDA's launch path, the Python interpreter). A judge starved of either reports host time as device
# time. Where the host has more, a judge gets more (worker/cores.py).
CORES_PER_GPU_JUDGE = 2
# The translation units of one load_inline build that compile at the same time (main.cpp beside cuda.cu); a
# build's MAX_JOBS beyond this gains nothing and only reserves cores it never uses.
PARALLEL_UNITS_PER_BUILD = 2
# Peak memory of one build: cicc or cudafe++ on a torch-including .cu (about 1.5 GiB) beside g++ on main.cpp
# (about 1 GiB), with room for a submission's templates. Enough builds to exhaust memory would get one killed
# by the OOM killer and reported as a compile crash.
BUILD_MEMORY_BYTES = 3 * 1024**3


@dataclass(frozen=True)
class BuildSlots:
    workers: int  # concurrent builds
    jobs: int  # MAX_JOBS of each build
    why: str  # for the pool's start log


@dataclass(frozen=True)
class Host:
    cores: int
    memory_available: int | None  # bytes; None where /proc/meminfo cannot be read


def plan_build_slots(requested: int, compile_jobs: int, gpu_judges: int, host: Host,
                     build_cores: int | None = None) -> BuildSlots:
    """`requested` > 0 is taken as given; 0 picks: one build on a CPU-only pool (the builds and the CPU
    judge's timing share the cores, so the compile-ahead also pauses while it times), and on a pool with GPU
    judges as many as the cores left to builds and the available memory hold. `build_cores`: the cores set
    aside for builds (worker/cores.py); None: the host's cores less the judges' share."""
    jobs = max(1, compile_jobs)
    if requested > 0:
        return BuildSlots(requested, jobs, f"{requested} as configured")
    if gpu_judges <= 0:
        return BuildSlots(1, jobs, "one on a CPU-only pool")
    spare = build_cores if build_cores is not None else spare_cores(host.cores, gpu_judges)
    workers = min(builds_by_cores(spare, jobs), builds_by_memory(host.memory_available))
    # A build keeps the MAX_JOBS it was given while the cores allow it; never more than its share.
    each = max(1, min(jobs, spare // workers))
    return BuildSlots(workers, each, describe(host, gpu_judges, spare, placed=build_cores is not None))


def spare_cores(cores: int, gpu_judges: int) -> int:
    return max(1, cores - CORES_PER_GPU_JUDGE * gpu_judges)


def builds_by_cores(spare: int, compile_jobs: int) -> int:
    return max(1, spare // min(compile_jobs, PARALLEL_UNITS_PER_BUILD))


def builds_by_memory(available: int | None) -> int:
    if available is None:
        return 1 << 30  # unknown: the cores decide
    return max(1, available // BUILD_MEMORY_BYTES)


def describe(host: Host, gpu_judges: int, spare: int, placed: bool = False) -> str:
    available = host.memory_available
    memory = "unknown memory" if available is None else f"{available / 1024**3:.0f} GiB available"
    if placed:
        return f"auto: the {spare} CPUs set aside for builds beside {gpu_judges} GPU judge(s), {memory}"
    return (f"auto: {host.cores} cores less {CORES_PER_GPU_JUDGE} for each of {gpu_judges} GPU judge(s) = {spare}"
            f" for builds, {memory}")


def read_host(meminfo: Path = MEMINFO) -> Host:
    return Host(usable_cores(), mem_available(meminfo))


def usable_cores() -> int:
    """The cores this process may run on (a container's or taskset's limit), not the machine's count."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1
