"""A roofline floor: the least time any kernel can take for a problem's FLOP and byte counts on a device
(docs/threats.md 8 and 20). A median below it means the clock or the work was not what it seems.

Peak rates come from a small table of datasheet figures keyed by device name. The floor divides the
time-at-peak by SAFETY, so a kernel must beat the datasheet by that factor before it is flagged; an
unknown device or a CPU gets no floor rather than a guessed one.
"""

from __future__ import annotations

from dataclasses import dataclass

from kernelgrade.evaluator.request import PrecisionKind, ProblemSpec
from kernelgrade.evaluator.roofline_floor import RooflineFloor

# Datasheet peaks are rarely reached (an H100's copy bandwidth measures about 3.0 of its 3.35 TB/s), and
# problem FLOP counts are those of the plain algorithm; 1.5 leaves room for both without letting a 2x
# timing error through.
SAFETY = 1.5
TERA = 1e12


@dataclass(frozen=True)
class DevicePeaks:
    """Dense peak rates in FLOP/s and bytes/s."""

    name: str
    fp32: float  # CUDA cores, no tensor cores
    tf32: float  # tensor cores
    half: float  # fp16/bf16 tensor cores
    memory: float  # HBM/GDDR bandwidth

    def compute(self, precision: PrecisionKind) -> float:
        """The fastest rate an accepted kernel may use. Under the fp32 policy a kernel may still use tensor
        cores through split-TF32 (three TF32 products per fp32 product), which reaches fp32 accuracy."""
        if precision is PrecisionKind.FP32:
            return max(self.fp32, self.tf32 / 3)
        if precision is PrecisionKind.TF32:
            return self.tf32
        return self.half


# Matched by substring of torch.cuda.get_device_name(), first match wins (so "H100 PCIe" before "H100",
# "GH200" before "H200").
PEAKS: tuple[tuple[str, DevicePeaks], ...] = (
    ("H100 PCIe", DevicePeaks("H100 PCIe", 51 * TERA, 378 * TERA, 756 * TERA, 2.0 * TERA)),
    ("H100 NVL", DevicePeaks("H100 NVL", 60 * TERA, 418 * TERA, 835 * TERA, 3.9 * TERA)),
    ("H100", DevicePeaks("H100 SXM", 67 * TERA, 495 * TERA, 989 * TERA, 3.35 * TERA)),
    ("GH200", DevicePeaks("GH200", 67 * TERA, 495 * TERA, 989 * TERA, 4.9 * TERA)),
    ("H200", DevicePeaks("H200", 67 * TERA, 495 * TERA, 989 * TERA, 4.8 * TERA)),
    ("B200", DevicePeaks("B200", 80 * TERA, 1100 * TERA, 2250 * TERA, 8.0 * TERA)),
    ("A100-PCIE-40GB", DevicePeaks("A100 PCIe 40GB", 19.5 * TERA, 156 * TERA, 312 * TERA, 1.555 * TERA)),
    ("A100", DevicePeaks("A100", 19.5 * TERA, 156 * TERA, 312 * TERA, 2.039 * TERA)),
    ("L40S", DevicePeaks("L40S", 91.6 * TERA, 183 * TERA, 366 * TERA, 0.864 * TERA)),
    ("L4", DevicePeaks("L4", 30.3 * TERA, 60 * TERA, 121 * TERA, 0.3 * TERA)),
    ("A10G", DevicePeaks("A10G", 31.2 * TERA, 62.5 * TERA, 125 * TERA, 0.6 * TERA)),
    ("RTX 4090", DevicePeaks("RTX 4090", 82.6 * TERA, 82.6 * TERA, 165 * TERA, 1.008 * TERA)),
)


def peaks_for(device_name: str) -> DevicePeaks | None:
    for key, peaks in PEAKS:
        if key in device_name:
            return peaks
    return None


def floor_for(problem: ProblemSpec, device_name: str) -> RooflineFloor | None:
    """None when the problem has no counts or the device no table row (CPUs have none: their caches,
    turbo clocks and vector widths vary too much for a floor that never misfires)."""
    peaks = peaks_for(device_name)
    if peaks is None or (not problem.flops and not problem.bytes_moved):
        return None
    kind = problem.precision.kind
    compute_ms = (problem.flops or 0.0) / peaks.compute(kind) / SAFETY * 1000.0
    memory_ms = (problem.bytes_moved or 0.0) / peaks.memory / SAFETY * 1000.0
    basis = {PrecisionKind.FP32: "fp32 (CUDA cores or split-TF32)", PrecisionKind.TF32: "tf32 tensor cores"}.get(
        kind, "fp16/bf16 tensor cores")
    return RooflineFloor(max(compute_ms, memory_ms), compute_ms, memory_ms, peaks.name, SAFETY, basis)
