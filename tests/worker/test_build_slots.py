"""How many builds the compile-ahead runs at once: the host's cores and memory, the judges it keeps fed."""

from __future__ import annotations

from pathlib import Path

from kernelgrade.evaluator.host.environment import mem_available
from kernelgrade.worker.build_slots import BUILD_MEMORY_BYTES, Host, plan_build_slots, read_host

GIB = 1024**3
# The GPU host the throughput issue measured on: 16 cores, 128 GiB, one H100.
H100_HOST = Host(cores=16, memory_available=120 * GIB)


def test_a_gpu_host_builds_as_many_as_its_spare_cores_hold_two_cores_each() -> None:
    slots = plan_build_slots(0, compile_jobs=4, gpu_judges=1, host=H100_HOST)
    # 16 cores less 2 for the judge = 14; a build compiles main.cpp beside cuda.cu, so two cores each.
    assert (slots.workers, slots.jobs) == (7, 2)
    assert "16 cores" in slots.why and "120 GiB" in slots.why


def test_each_gpu_judge_keeps_two_cores_of_its_own() -> None:
    eight = plan_build_slots(0, compile_jobs=4, gpu_judges=8, host=Host(128, 560 * GIB))
    assert (eight.workers, eight.jobs) == ((128 - 16) // 2, 2)


def test_single_unit_builds_fit_one_per_core() -> None:
    slots = plan_build_slots(0, compile_jobs=1, gpu_judges=1, host=H100_HOST)
    assert (slots.workers, slots.jobs) == (14, 1)


def test_memory_bounds_the_builds_and_they_keep_their_jobs() -> None:
    slots = plan_build_slots(0, compile_jobs=4, gpu_judges=1, host=Host(16, 7 * GIB))
    # Two builds of 3 GiB fit in 7 GiB; with the cores to spare, each keeps its MAX_JOBS of 4.
    assert (slots.workers, slots.jobs) == (2, 4)
    starved = plan_build_slots(0, compile_jobs=4, gpu_judges=1, host=Host(16, GIB))
    assert starved.workers == 1


def test_unknown_memory_leaves_the_choice_to_the_cores() -> None:
    slots = plan_build_slots(0, compile_jobs=2, gpu_judges=1, host=Host(8, None))
    assert (slots.workers, slots.jobs) == (3, 2)
    assert "unknown memory" in slots.why


def test_a_small_gpu_host_still_builds_one() -> None:
    slots = plan_build_slots(0, compile_jobs=4, gpu_judges=2, host=Host(2, 4 * GIB))
    assert (slots.workers, slots.jobs) == (1, 1)


def test_a_cpu_only_pool_builds_one_at_a_time() -> None:
    slots = plan_build_slots(0, compile_jobs=4, gpu_judges=0, host=Host(64, 500 * GIB))
    assert (slots.workers, slots.jobs) == (1, 4)


def test_a_positive_setting_is_taken_as_given() -> None:
    slots = plan_build_slots(5, compile_jobs=3, gpu_judges=0, host=Host(2, GIB))
    assert (slots.workers, slots.jobs, slots.why) == (5, 3, "5 as configured")


def test_mem_available_reads_the_kernels_estimate(tmp_path: Path) -> None:
    meminfo = tmp_path / "meminfo"
    meminfo.write_text("MemTotal:       32000000 kB\nMemFree:         1000 kB\nMemAvailable:   12582912 kB\n")
    assert mem_available(meminfo) == 12 * GIB
    meminfo.write_text("MemTotal:       32000000 kB\n")  # a kernel older than 3.14
    assert mem_available(meminfo) is None
    assert mem_available(tmp_path / "missing") is None


def test_this_host_is_read() -> None:
    host = read_host()
    assert host.cores >= 1
    assert host.memory_available is None or host.memory_available > BUILD_MEMORY_BYTES // 100
