"""The device nodes a run child needs for its one GPU, and how it names that GPU inside the sandbox.

The judge's CUDA index is not the /dev/nvidiaN minor number (CUDA orders devices fastest first, and
CUDA_VISIBLE_DEVICES may renumber them), so the minor is found through the driver's own table in
/proc/driver/nvidia/gpus, matched by the GPU's UUID or PCI address. Inside, the child names its GPU by
UUID, which selects the same device however the driver enumerates what the child can open.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from kernelgrade.evaluator.sandbox.launcher import visible_device

DEV = Path("/dev")
DRIVER_TABLE = Path("/proc/driver/nvidia/gpus")
# Needed by every CUDA process: the control node and unified memory (the -tools node for profilers).
SHARED_NODES = ("nvidiactl", "nvidia-uvm", "nvidia-uvm-tools")
# MIG capability nodes, present only on hosts that use MIG.
CAPS_DIR = "nvidia-caps"


class GpuNodesError(Exception):
    """The judge's GPU could not be matched to a device node; the child is not started without it."""


@dataclass(frozen=True)
class GpuAccess:
    nodes: tuple[Path, ...]
    visible_devices: str  # CUDA_VISIBLE_DEVICES inside the sandbox


@dataclass(frozen=True)
class _DriverEntry:
    minor: int
    uuid: str
    bus: str


def gpu_access(gpu_index: int, parent_env: Mapping[str, str]) -> GpuAccess:
    uuid, bus = _identity(gpu_index)
    minor = _minor(uuid, bus)
    own = DEV / f"nvidia{minor}"
    if not (DEV / "nvidiactl").exists() or not own.exists():
        raise GpuNodesError(f"{DEV / 'nvidiactl'} or {own} is missing; cannot give the child its GPU")
    nodes = [DEV / n for n in SHARED_NODES if (DEV / n).exists()] + [own]
    if (DEV / CAPS_DIR).is_dir():
        nodes.append(DEV / CAPS_DIR)
    return GpuAccess(tuple(nodes), uuid or visible_device(gpu_index, parent_env))


def _identity(gpu_index: int) -> tuple[str, str]:
    """The GPU's UUID (as CUDA_VISIBLE_DEVICES takes it) and PCI address, each empty where torch lacks it."""
    import torch

    props = torch.cuda.get_device_properties(gpu_index)
    raw = str(getattr(props, "uuid", "") or "")
    uuid = raw if not raw or raw.startswith(("GPU-", "MIG-")) else f"GPU-{raw}"
    parts = [getattr(props, f"pci_{k}_id", None) for k in ("domain", "bus", "device")]
    bus = f"{parts[0]:04x}:{parts[1]:02x}:{parts[2]:02x}.0" if all(isinstance(p, int) for p in parts) else ""
    return uuid, bus


def _minor(uuid: str, bus: str) -> int:
    entries = _driver_entries()
    for entry in entries:
        if (uuid and entry.uuid.lower() == uuid.lower()) or (bus and entry.bus.lower() == bus.lower()):
            return entry.minor
    minors = sorted(int(m.group(1)) for p in DEV.iterdir() if (m := re.fullmatch(r"nvidia(\d+)", p.name)))
    if len(minors) == 1:
        return minors[0]  # one GPU on the host: nothing to choose
    raise GpuNodesError(f"cannot tell which of /dev/nvidia{minors} is the judge's GPU (uuid {uuid or '?'},"
                        f" PCI {bus or '?'}; driver table: {len(entries)} entries)")


def _driver_entries() -> list[_DriverEntry]:
    entries: list[_DriverEntry] = []
    if not DRIVER_TABLE.is_dir():
        return entries
    for info in DRIVER_TABLE.glob("*/information"):
        fields = dict(_field(line) for line in info.read_text(errors="replace").splitlines() if ":" in line)
        if fields.get("Device Minor", "").isdigit():
            entries.append(_DriverEntry(int(fields["Device Minor"]), fields.get("GPU UUID", ""),
                                        fields.get("Bus Location", info.parent.name)))
    return entries


def _field(line: str) -> tuple[str, str]:
    key, _, value = line.partition(":")
    return key.strip(), value.strip()
