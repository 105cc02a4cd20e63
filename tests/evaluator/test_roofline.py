"""The roofline floor: datasheet peaks by device name, divided by the safety factor, per precision policy."""

from __future__ import annotations

import pytest

from kernelgrade.evaluator.integrity.crosscheck import roofline_findings
from kernelgrade.evaluator.integrity.roofline import SAFETY, floor_for, peaks_for
from kernelgrade.evaluator.request import PrecisionKind, PrecisionPolicy, ProblemSpec

N = 4096
SQUARE_MATMUL = ProblemSpec("square_matmul", "", flops=2 * N**3, bytes_moved=3 * N * N * 4)


@pytest.mark.parametrize(("name", "row"), [
    ("NVIDIA H100 80GB HBM3", "H100 SXM"), ("NVIDIA H100 PCIe", "H100 PCIe"), ("NVIDIA H200", "H200"),
    ("NVIDIA GH200 480GB", "GH200"), ("NVIDIA A100-SXM4-80GB", "A100"), ("NVIDIA GeForce GTX 1080", None),
])
def test_device_names_pick_their_row(name: str, row: str | None) -> None:
    peaks = peaks_for(name)
    assert (peaks.name if peaks else None) == row


def test_square_matmul_on_an_h100_is_compute_bound_with_split_tf32_allowed() -> None:
    floor = floor_for(SQUARE_MATMUL, "NVIDIA H100 80GB HBM3")
    assert floor is not None
    # fp32 policy: max(67 TFLOP/s CUDA cores, 495 / 3 split-TF32) = 165 TFLOP/s, then / 1.5.
    assert floor.compute_ms == pytest.approx(2 * N**3 / 165e12 / SAFETY * 1000)
    assert floor.floor_ms == floor.compute_ms
    # cuBLAS's true fp32 time on an H100 (2.66 ms, docs/timing.md) is far above it: no false alarm.
    assert floor.floor_ms < 2.66 / 4


def test_policy_changes_the_compute_peak() -> None:
    tf32 = ProblemSpec("m", "", precision=PrecisionPolicy(PrecisionKind.TF32), flops=1e12)
    half = ProblemSpec("m", "", precision=PrecisionPolicy(PrecisionKind.TOLERANCE), flops=1e12)
    tf32_floor, half_floor = floor_for(tf32, "NVIDIA H100"), floor_for(half, "NVIDIA H100")
    assert tf32_floor is not None and half_floor is not None
    assert tf32_floor.floor_ms == pytest.approx(1e12 / 495e12 / SAFETY * 1000)
    assert half_floor.floor_ms < tf32_floor.floor_ms


def test_memory_bound_problems_use_bandwidth() -> None:
    relu = ProblemSpec("relu", "", flops=16384**2, bytes_moved=2 * 16384**2 * 4)
    h100, h200 = floor_for(relu, "NVIDIA H100 80GB HBM3"), floor_for(relu, "NVIDIA H200")
    assert h100 is not None and h200 is not None
    assert h100.floor_ms == h100.memory_ms == pytest.approx(2 * 16384**2 * 4 / 3.35e12 / SAFETY * 1000)
    assert h200.floor_ms < h100.floor_ms


def test_no_floor_without_counts_or_known_device() -> None:
    assert floor_for(ProblemSpec("x", ""), "NVIDIA H100") is None
    assert floor_for(SQUARE_MATMUL, "Intel(R) Xeon(R) CPU") is None


def test_a_median_below_the_floor_is_flagged_and_one_above_is_not() -> None:
    floor = floor_for(SQUARE_MATMUL, "NVIDIA H100 80GB HBM3")
    assert floor is not None
    flagged = roofline_findings(floor.floor_ms / 2, floor)
    assert [f.code for f in flagged] == ["below_roofline"]
    assert "H100 SXM" in flagged[0].message
    assert roofline_findings(floor.floor_ms * 1.01, floor) == []
    assert roofline_findings(0.001, None) == []
