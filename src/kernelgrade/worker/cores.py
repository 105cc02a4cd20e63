"""Which cores the GPU judges measure on and which the builds run on.

The service builds submissions on the host where it times them. A GPU judge's timing loop and its run child
(the Python interpreter and CUDA's launch path) need cores that no compiler takes from them: a descheduled
judge makes timing slower and noisier, and where the stream is not held its dispatch lands in device time.
So each GPU judge gets whole physical cores of its own (both hardware threads of each), and builds and
everything else the pool starts go on the rest. Two at least; four where the host has them to spare, because
the judge's process does more than time: while the candidate is checked it makes the next trial's inputs,
compares outputs and loads the reference's child for timing, all beside the candidate's calls. A CPU-only
pool places nothing: its one judge's measurements and the builds already take turns through the host lock
(evaluator/host/host_lock.py).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from kernelgrade.worker.build_slots import CORES_PER_GPU_JUDGE

# Builds need at least this many cores left beside the judges' (one load_inline build compiles main.cpp
# beside cuda.cu); a host with fewer keeps everything on every core, as an unplaced pool does.
MIN_BUILD_CORES = 2
CPU_TOPOLOGY = Path("/sys/devices/system/cpu")
# What a GPU judge gets by default where the judges take at most half of the host's cores with it: on a 16-core
# H200 host, a stream of small prebuilt problems graded 1.21x faster with four than with two (1,276 and 1,546
# verdicts per device-hour, one server after the other in one run, the same speedups): the trials' inputs,
# made on the judge's cores, kept the candidate's checks waiting 5.3 s in all instead of 8.9 s. The other half
# stays with the builds that a stream of new submissions brings.
ROOMY_CORES_PER_GPU_JUDGE = 4


@dataclass(frozen=True)
class CorePlan:
    measure: tuple[tuple[int, ...], ...]  # one per GPU judge, in slot order; empty: no placement
    builds: tuple[int, ...]  # where builds run; empty: no placement
    why: str  # for the pool's start log

    def for_judge(self, position: int) -> tuple[int, ...]:
        return self.measure[position] if position < len(self.measure) else ()

    def judge_cpus(self) -> int:
        """The fewest CPUs a judge runs on; 0 where judges are not placed."""
        return min(map(len, self.measure), default=0)


def plan_cores(per_judge: int, gpu_judges: int, available: Sequence[int],
               siblings: dict[int, tuple[int, ...]] | None = None) -> CorePlan:
    """`per_judge` < 0: automatic (`default_per_judge`); 0: no placement. The judges take cores from the top of
    the range (the kernel sends most device interrupts to the low ones)."""
    if gpu_judges <= 0:
        return CorePlan((), (), "no GPU judge: CPU measurements and builds take turns through the host lock")
    if per_judge == 0:
        return CorePlan((), (), "off (KERNELGRADE_MEASURE_CORES=0)")
    groups = physical_cores(available, siblings if siblings is not None else read_siblings(available))
    each = default_per_judge(len(groups), gpu_judges) if per_judge < 0 else per_judge
    wanted = each * gpu_judges
    if len(groups) - wanted < MIN_BUILD_CORES:
        return CorePlan((), (), f"off: {len(groups)} physical cores cannot set {each} aside for each of"
                                f" {gpu_judges} GPU judge(s) and keep {MIN_BUILD_CORES} for builds")
    reserved, rest = groups[-wanted:], groups[:-wanted]
    measure = tuple(_flat(reserved[i * each:(i + 1) * each]) for i in range(gpu_judges))
    builds = _flat(rest)
    return CorePlan(measure, builds, f"{each} physical core(s) for each GPU judge ({_listed(measure)}),"
                                     f" {len(builds)} logical CPUs for builds")


def default_per_judge(physical: int, gpu_judges: int) -> int:
    """ROOMY_CORES_PER_GPU_JUDGE where the judges then take at most half of the `physical` cores, fewer down to
    CORES_PER_GPU_JUDGE where they would take more."""
    return max(CORES_PER_GPU_JUDGE, min(ROOMY_CORES_PER_GPU_JUDGE, physical // (2 * gpu_judges)))


def physical_cores(available: Sequence[int], siblings: dict[int, tuple[int, ...]]) -> list[tuple[int, ...]]:
    """The available logical CPUs grouped by physical core (hardware threads together), in CPU order."""
    allowed, seen, groups = set(available), set[int](), []
    for cpu in sorted(allowed):
        if cpu in seen:
            continue
        group = tuple(sorted(c for c in siblings.get(cpu, (cpu,)) if c in allowed)) or (cpu,)
        seen.update(group)
        groups.append(group)
    return groups


def read_siblings(available: Sequence[int], root: Path = CPU_TOPOLOGY) -> dict[int, tuple[int, ...]]:
    """Each CPU's hardware-thread siblings from sysfs; a CPU whose topology cannot be read stands alone."""
    found = {}
    for cpu in available:
        try:
            text = (root / f"cpu{cpu}" / "topology" / "thread_siblings_list").read_text()
        except OSError:
            continue
        found[cpu] = parse_cpu_list(text)
    return found


def parse_cpu_list(text: str) -> tuple[int, ...]:
    """`0-3,8,10-11` -> (0, 1, 2, 3, 8, 10, 11), the kernel's list format."""
    cpus: list[int] = []
    for part in text.strip().split(","):
        if not part:
            continue
        low, _, high = part.partition("-")
        cpus.extend(range(int(low), int(high or low) + 1))
    return tuple(cpus)


def available_cpus() -> tuple[int, ...]:
    """The CPUs this process may run on (a container's or taskset's limit)."""
    try:
        return tuple(sorted(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return tuple(range(os.cpu_count() or 1))


def _flat(groups: Sequence[tuple[int, ...]]) -> tuple[int, ...]:
    return tuple(cpu for group in groups for cpu in group)


def _listed(measure: tuple[tuple[int, ...], ...]) -> str:
    return "; ".join(",".join(map(str, cpus)) for cpus in measure)
