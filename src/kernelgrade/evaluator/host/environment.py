"""Facts about the machine a result was measured on, recorded beside every number."""

from __future__ import annotations

import platform
import re
import socket
from pathlib import Path

import torch

from kernelgrade.evaluator.result import Environment


def describe(device: torch.device, sandbox: str) -> Environment:
    cuda = device.type == "cuda"
    return Environment(
        device_kind=device.type,
        device_name=torch.cuda.get_device_name(device) if cuda else _cpu_name(),
        driver=_nvidia_driver() if cuda else "",
        torch=torch.__version__,
        cuda=torch.version.cuda or "",
        python=platform.python_version(),
        host=socket.gethostname(),
        arch=cuda_arch(device) if cuda else platform.machine(),
        sandbox=sandbox,
    )


def cuda_arch(device: torch.device) -> str:
    major, minor = torch.cuda.get_device_capability(device)
    return f"{major}.{minor}"


def device_class(device: torch.device) -> str:
    """A short routing name such as `cuda-h100` or `cpu-x86_64`."""
    if device.type != "cuda":
        return f"cpu-{platform.machine()}"
    name = torch.cuda.get_device_name(device).lower()
    match = re.search(r"\b([a-z]+\d{2,4}[a-z]*)\b", name.replace("nvidia", ""))
    return f"cuda-{match.group(1) if match else 'gpu'}"


def _nvidia_driver() -> str:
    try:
        text = Path("/proc/driver/nvidia/version").read_text()
    except OSError:
        return "unknown"
    match = re.search(r"Kernel Module\s+(?:for \S+\s+)?([\d.]+)", text)
    return match.group(1) if match else "unknown"


def _cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


MEMINFO = Path("/proc/meminfo")


def mem_available(meminfo: Path = MEMINFO) -> int | None:
    """MemAvailable in bytes (the kernel's estimate of what can be used without swapping), or None."""
    try:
        lines = meminfo.read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        name, _, value = line.partition(":")
        parts = value.split()
        if name == "MemAvailable" and parts and parts[0].isdigit():
            return int(parts[0]) * 1024  # the file counts kB
    return None
