"""bench/throughput.py --side-by-side: the compared configurations run at once, each server on a GPU and an equal
share of the CPUs of its own, so a before/after ratio shares the host's conditions; --both-orders runs them again
in reverse order."""

from __future__ import annotations

import importlib
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"


def _modules(monkeypatch: pytest.MonkeyPatch) -> tuple[ModuleType, ModuleType]:
    monkeypatch.syspath_prepend(str(BENCH))
    return importlib.import_module("throughput"), importlib.import_module("throughput_service")


def test_each_configuration_gets_a_gpu_and_an_equal_share_of_the_cpus(monkeypatch: pytest.MonkeyPatch) -> None:
    throughput, service = _modules(monkeypatch)
    chosen = [service.Config("before", {}), service.Config("after", {})]
    placed = throughput.side_by_side(chosen, "cuda", {7, 0, 1, 2, 3, 4, 5, 6, 8}, ["2", "3"])
    assert [c.label for c in placed] == ["before", "after"]
    assert [c.place for c in placed] == [service.Slice("2", (0, 1, 2, 3)), service.Slice("3", (4, 5, 6, 7))]
    on_cpu = throughput.side_by_side(chosen, "cpu", {0, 1}, [])
    assert [c.place for c in on_cpu] == [service.Slice(None, (0,)), service.Slice(None, (1,))]


@pytest.mark.parametrize(("device", "cpus", "gpus"), [("cuda", {0, 1, 2, 3}, ["0"]), ("cpu", {0}, [])])
def test_too_small_a_host_for_the_configurations_is_refused(monkeypatch: pytest.MonkeyPatch, device: str,
                                                            cpus: set[int], gpus: list[str]) -> None:
    throughput, service = _modules(monkeypatch)
    chosen = [service.Config("before", {}), service.Config("after", {})]
    with pytest.raises(SystemExit, match="--side-by-side runs 2 configurations at once"):
        throughput.side_by_side(chosen, device, cpus, gpus)


def test_a_pinned_program_and_its_children_run_on_the_given_cpus_only(monkeypatch: pytest.MonkeyPatch) -> None:
    _throughput, service = _modules(monkeypatch)
    child = "import os, subprocess, sys; print(sorted(os.sched_getaffinity(0)));" \
            " subprocess.run([sys.executable, '-c', 'import os; print(sorted(os.sched_getaffinity(0)))'])"
    done = subprocess.run(service.pinned((0,), [sys.executable, "-c", child]), capture_output=True, text=True,
                          check=True, timeout=60)
    assert done.stdout.split("\n")[:2] == ["[0]", "[0]"]
    assert service.pinned((), ["true"]) == ["true"]


def test_both_orders_runs_the_configurations_again_in_reverse(monkeypatch: pytest.MonkeyPatch) -> None:
    throughput, service = _modules(monkeypatch)
    chosen = [service.Config("before", {}, Path("/old/src")), service.Config("after", {"KERNELGRADE_X": "1"})]
    again = throughput.both_orders(chosen)
    assert [c.label for c in again] == ["before", "after", "after (2)", "before (2)"]
    assert again[3].src == Path("/old/src") and again[2].env == {"KERNELGRADE_X": "1"}
