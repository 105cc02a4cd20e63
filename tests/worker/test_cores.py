"""Where GPU judges measure and where builds run: the plan from the host's cores, and children really started
on the cores they were given."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from kernelgrade.evaluator.sandbox.cpus import on_cpus
from kernelgrade.evaluator.sandbox.launcher import ChildSpec, SubprocessLauncher
from kernelgrade.worker.build_slots import Host, plan_build_slots
from kernelgrade.worker.cores import parse_cpu_list, physical_cores, plan_cores, read_siblings

# 16 logical CPUs as 8 physical cores with two hardware threads each (siblings n and n+8), as many hosts number them.
SMT16 = {cpu: (cpu % 8, cpu % 8 + 8) for cpu in range(16)}


def test_each_gpu_judge_gets_whole_physical_cores_from_the_top() -> None:
    plan = plan_cores(-1, 1, range(16), SMT16)
    assert plan.measure == ((4, 12, 5, 13, 6, 14, 7, 15),)
    assert set(plan.builds) == set(range(8, 12)) | set(range(4))
    assert "4 physical core(s)" in plan.why


def test_two_judges_get_disjoint_cores_and_builds_the_rest() -> None:
    plan = plan_cores(-1, 2, range(32), {cpu: (cpu,) for cpu in range(32)})
    assert plan.measure == ((24, 25, 26, 27), (28, 29, 30, 31))
    assert plan.builds == tuple(range(24))
    assert plan.for_judge(1) == (28, 29, 30, 31) and plan.for_judge(2) == ()
    assert plan.judge_cpus() == 4


def test_the_judges_take_at_most_half_the_cores_by_default_and_two_each_at_least() -> None:
    assert plan_cores(-1, 2, range(16), SMT16).measure == ((4, 12, 5, 13), (6, 14, 7, 15))
    assert plan_cores(-1, 1, range(5), {}).measure == ((3, 4),)
    assert plan_cores(-1, 3, range(8), {}).measure == ((2, 3), (4, 5), (6, 7))


def test_no_placement_without_gpu_judges_when_off_or_on_a_small_host() -> None:
    assert plan_cores(-1, 0, range(16), SMT16).measure == ()
    assert plan_cores(-1, 0, range(16), SMT16).judge_cpus() == 0
    off = plan_cores(0, 1, range(16), SMT16)
    assert (off.measure, off.builds) == ((), ()) and "KERNELGRADE_MEASURE_CORES=0" in off.why
    small = plan_cores(-1, 1, range(3), {})
    assert small.builds == () and "cannot set 2 aside" in small.why


def test_explicit_cores_per_judge() -> None:
    assert plan_cores(1, 1, range(8), {}).measure == ((7,),)


def test_cpu_lists_and_siblings_read_as_the_kernel_writes_them(tmp_path: Path) -> None:
    assert parse_cpu_list("0-3,8,10-11\n") == (0, 1, 2, 3, 8, 10, 11)
    for cpu, text in ((0, "0,2"), (1, "1,3"), (2, "0,2"), (3, "1,3")):
        (tmp_path / f"cpu{cpu}" / "topology").mkdir(parents=True)
        (tmp_path / f"cpu{cpu}" / "topology" / "thread_siblings_list").write_text(text + "\n")
    siblings = read_siblings(range(5), tmp_path)
    assert siblings[0] == (0, 2) and 4 not in siblings
    # A sibling outside the CPUs this process may use is left out of its group.
    assert physical_cores([0, 1, 2, 4], siblings) == [(0, 2), (1,), (4,)]


def test_builds_are_planned_on_the_cores_set_aside_for_them() -> None:
    slots = plan_build_slots(0, compile_jobs=4, gpu_judges=1, host=Host(16, 120 * 1024**3), build_cores=12)
    assert (slots.workers, slots.jobs) == (6, 2) and "12 CPUs set aside" in slots.why


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs two CPUs to place a child on one of them")
def test_a_child_started_on_cpus_runs_there_and_the_thread_gets_its_cores_back(tmp_path: Path) -> None:
    mine = os.sched_getaffinity(0)
    target = (max(mine),)
    with on_cpus(target):
        inside = set(map(int, subprocess.run(
            [sys.executable, "-c", "import os; print(*os.sched_getaffinity(0))"],
            capture_output=True, text=True, check=True).stdout.split()))
    assert inside == set(target)
    assert os.sched_getaffinity(0) == mine
    spec = ChildSpec((sys.executable, "-c", "import os; print(*os.sched_getaffinity(0))"), dict(os.environ),
                     tmp_path, cpus=target)
    proc = SubprocessLauncher().popen(spec)
    out, _ = proc.communicate(timeout=60)
    assert set(map(int, out.split())) == set(target)
    assert os.sched_getaffinity(0) == mine
