"""Whether a sandboxed run child can use device memory its judge allocated, and what that would save against the
host region through which a trial's inputs and outputs cross now.

    PYTHONPATH=src python3 bench/device_sharing.py [--gib 6] [--sandbox auto] [--times 3]

A large problem's trial crosses host memory four times today: the judge places the inputs in the child's shared
region (wire/shared_region.py), the child copies them to its device, and its outputs come back the same way. In
mixed streams on an H200 host KernelBench's softmax (6 GiB of inputs and as much of outputs a trial) took 25-30 s
of device time per verdict, most of it moving trials. Here the judge instead allocates device memory with the
CUDA driver's virtual memory calls (cuMemCreate, exportable as a POSIX descriptor), fills it, and hands the
descriptors to a child started by the judge's own launcher (`--sandbox`, as a run child is), which imports and
maps them, runs softmax over the inputs and writes the result into the second allocation. Then the same trial
through a registered host region, as now. A descriptor, unlike CUDA's legacy IPC handles, needs no shared pid
namespace, which every sandbox level takes away.

Printed per run: each side's seconds for each step of both ways, and whether the outputs arrived equal to the
judge's own softmax of its inputs. Needs a CUDA GPU; prints numbers, asserts nothing.

First run, on an H200 host under the unshare sandbox (bwrap was not installed there), --gib 6, two runs: both ways
arrived equal. The child imported and mapped the two allocations in 1 ms and wrote softmax into the judge's memory
in 35-37 ms. Through the host region: the judge took 6.0-6.6 s to reserve and register it (12 GiB) and the child
1.3-2.0 s to map and register it; each crossing of the 6 GiB (inputs placed, to the device, outputs into the region,
read back) took 0.12-0.15 s.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

BENCH = Path(__file__).resolve().parent

# cuda.h's values for the calls below.
_ALLOCATION_PINNED, _LOCATION_DEVICE, _HANDLE_POSIX_FD, _ACCESS_READ_WRITE, _GRANULARITY_MINIMUM = 1, 1, 1, 3, 0
# A child imports torch and creates its CUDA context before its first reply: seconds, more on a busy host.
START_TIMEOUT_S = 120.0
# One trial of --gib each way, both ways, with softmax between: well under a minute even through host memory.
TRIAL_TIMEOUT_S = 300.0


class _Location(ctypes.Structure):
    _fields_ = [("type", ctypes.c_int), ("id", ctypes.c_int)]


class _AllocFlags(ctypes.Structure):
    _fields_ = [("compressionType", ctypes.c_ubyte), ("gpuDirectRDMACapable", ctypes.c_ubyte),
                ("usage", ctypes.c_ushort), ("reserved", ctypes.c_ubyte * 4)]


class _AllocationProp(ctypes.Structure):
    _fields_ = [("type", ctypes.c_int), ("requestedHandleTypes", ctypes.c_int), ("location", _Location),
                ("win32HandleMetaData", ctypes.c_void_p), ("allocFlags", _AllocFlags)]


class _AccessDesc(ctypes.Structure):
    _fields_ = [("location", _Location), ("flags", ctypes.c_int)]


class Driver:
    """The driver calls this needs, each checked: a failure raises with the call's name and CUDA's error name."""

    def __init__(self) -> None:
        self._lib = ctypes.CDLL("libcuda.so.1")

    def __call__(self, name: str, *args: Any) -> None:
        status = getattr(self._lib, name)(*args)
        if status != 0:
            label = ctypes.c_char_p()
            self._lib.cuGetErrorName(status, ctypes.byref(label))
            raise RuntimeError(f"{name}: {(label.value or b'?').decode()} ({status})")

    def properties(self, device: int) -> _AllocationProp:
        return _AllocationProp(type=_ALLOCATION_PINNED, requestedHandleTypes=_HANDLE_POSIX_FD,
                               location=_Location(_LOCATION_DEVICE, device))

    def granularity(self, device: int) -> int:
        value = ctypes.c_size_t()
        prop = self.properties(device)
        self("cuMemGetAllocationGranularity", ctypes.byref(value), ctypes.byref(prop), _GRANULARITY_MINIMUM)
        return value.value


class DeviceMemory:
    """One allocation mapped into this process: made here (`create`) or imported from its descriptor."""

    def __init__(self, driver: Driver, handle: int, size: int, device: int) -> None:
        self.driver, self.handle, self.size = driver, handle, size
        address = ctypes.c_uint64()
        driver("cuMemAddressReserve", ctypes.byref(address), ctypes.c_size_t(size), ctypes.c_size_t(0),
               ctypes.c_uint64(0), ctypes.c_uint64(0))
        self.address = address.value
        driver("cuMemMap", ctypes.c_uint64(self.address), ctypes.c_size_t(size), ctypes.c_size_t(0),
               ctypes.c_uint64(handle), ctypes.c_uint64(0))
        access = _AccessDesc(_Location(_LOCATION_DEVICE, device), _ACCESS_READ_WRITE)
        driver("cuMemSetAccess", ctypes.c_uint64(self.address), ctypes.c_size_t(size), ctypes.byref(access),
               ctypes.c_size_t(1))

    @classmethod
    def create(cls, driver: Driver, nbytes: int, device: int) -> DeviceMemory:
        step = driver.granularity(device)
        size = -(-nbytes // step) * step
        handle = ctypes.c_uint64()
        prop = driver.properties(device)
        driver("cuMemCreate", ctypes.byref(handle), ctypes.c_size_t(size), ctypes.byref(prop), ctypes.c_uint64(0))
        return cls(driver, handle.value, size, device)

    @classmethod
    def imported(cls, driver: Driver, fd: int, size: int, device: int) -> DeviceMemory:
        handle = ctypes.c_uint64()
        driver("cuMemImportFromShareableHandle", ctypes.byref(handle), ctypes.c_void_p(fd), _HANDLE_POSIX_FD)
        return cls(driver, handle.value, size, device)

    def export(self) -> int:
        fd = ctypes.c_int()
        self.driver("cuMemExportToShareableHandle", ctypes.byref(fd), ctypes.c_uint64(self.handle),
                    _HANDLE_POSIX_FD, ctypes.c_uint64(0))
        return fd.value

    def tensor(self, shape: tuple[int, int]) -> torch.Tensor:
        """float32 values over the allocation; the tensor does not own it (keep this object alive)."""
        interface = {"shape": shape, "typestr": "<f4", "data": (self.address, False), "version": 3,
                     "strides": None}
        holder = type("Held", (), {"__cuda_array_interface__": interface})()
        return torch.as_tensor(holder, device="cuda")

    def close(self) -> None:
        self.driver("cuMemUnmap", ctypes.c_uint64(self.address), ctypes.c_size_t(self.size))
        self.driver("cuMemAddressFree", ctypes.c_uint64(self.address), ctypes.c_size_t(self.size))
        self.driver("cuMemRelease", ctypes.c_uint64(self.handle))


def timed(seconds: dict[str, float], name: str, act: Callable[[], Any]) -> Any:
    torch.cuda.synchronize()
    start = time.perf_counter()
    value = act()
    torch.cuda.synchronize()
    seconds[name] = round(time.perf_counter() - start, 4)
    return value


def child_main() -> None:
    """The child's side: one JSON request a line on stdin, one reply a line on stdout."""
    torch.zeros(1, device="cuda")
    print(json.dumps({"ready": True}), flush=True)
    for line in sys.stdin:
        request = json.loads(line)
        try:
            reply = _child_trial(request)
        except Exception as exc:  # reported to the judge's side, which prints it
            reply = {"error": f"{type(exc).__name__}: {exc}"}
        print(json.dumps(reply), flush=True)


def _child_trial(request: dict[str, Any]) -> dict[str, Any]:
    from kernelgrade.evaluator.wire.shared_region import SharedRegion

    seconds: dict[str, float] = {}
    driver, shape, size = Driver(), (request["rows"], request["cols"]), request["size"]
    memory = timed(seconds, "device: import and map", lambda: [
        DeviceMemory.imported(driver, fd, size, 0) for fd in request["device_fds"]])
    inputs, outputs = (m.tensor(shape) for m in memory)
    timed(seconds, "device: softmax into the judge's memory", lambda: outputs.copy_(torch.softmax(inputs, -1)))
    for m in memory:
        m.close()
    region = SharedRegion.attach(request["region_fd"], pin=True)
    assert region is not None, "the region's descriptor did not arrive"
    nbytes = shape[0] * shape[1] * 4
    view = timed(seconds, "host: map and register", lambda: region.view(2 * nbytes))
    host = torch.frombuffer(view, dtype=torch.float32).view(2, *shape)
    on_device = timed(seconds, "host: inputs to the device", lambda: host[0].to("cuda"))
    result = timed(seconds, "host: softmax", lambda: torch.softmax(on_device, -1))
    timed(seconds, "host: outputs into the region", lambda: host[1].copy_(result))
    return {"seconds": seconds}


def judge_trial(launcher_name: str, gib: float, work: Path) -> tuple[dict[str, float], dict[str, Any], list[str]]:
    from kernelgrade.evaluator.wire.shared_region import SharedRegion

    rows = 4096
    cols = int(gib * 1024**3) // (4 * rows)
    nbytes, shape, driver = rows * cols * 4, (rows, cols), Driver()
    seconds: dict[str, float] = {}
    memory = timed(seconds, "device: create two", lambda: [DeviceMemory.create(driver, nbytes, 0) for _ in "io"])
    fds = timed(seconds, "device: export", lambda: [m.export() for m in memory])
    inputs, outputs = (m.tensor(shape) for m in memory)
    timed(seconds, "device: inputs drawn", inputs.normal_)
    expected = torch.softmax(inputs, -1)
    region = SharedRegion.create(pin=True)
    view = timed(seconds, "host: region reserved and registered", lambda: region.reserve(2 * nbytes))
    host = torch.frombuffer(view, dtype=torch.float32).view(2, *shape)
    timed(seconds, "host: inputs placed", lambda: host[0].copy_(inputs))
    try:
        reply, level = _ask_child(launcher_name, work, (*fds, region.fd), {
            "device_fds": fds, "region_fd": region.fd, "rows": rows, "cols": cols, "size": memory[0].size})
    finally:
        for fd in fds:  # an exported descriptor holds its allocation as long as it is open
            os.close(fd)
    equal = [f"device: {torch.equal(outputs, expected)}"]
    back = timed(seconds, "host: outputs read to the device", lambda: host[1].to("cuda"))
    equal.append(f"host: {torch.equal(back, expected)}")
    for m in memory:
        m.close()
    region.close()
    return seconds, reply, [*equal, f"sandbox: {level}"]


def _ask_child(launcher_name: str, work: Path, fds: tuple[int, ...], request: dict[str, Any]
               ) -> tuple[dict[str, Any], str]:
    """One trial's request answered by a child the judge's launcher starts with `fds`, and the launcher's level."""
    from kernelgrade.evaluator.sandbox.child_env import child_env, package_root
    from kernelgrade.evaluator.sandbox.child_process import ChildProcess
    from kernelgrade.evaluator.sandbox.launcher import ChildSpec
    from kernelgrade.evaluator.sandbox.levels import make_launcher

    launcher = make_launcher(launcher_name)
    code = f"import sys; sys.path.insert(0, {str(BENCH)!r}); import device_sharing; device_sharing.child_main()"
    spec = ChildSpec((sys.executable, "-s", "-c", code), child_env(work, work, {}), work,
                     readable=(package_root(), BENCH), gpu_index=torch.cuda.current_device(),
                     shared_fds=fds, purpose="probe")
    child = ChildProcess(launcher.popen(spec))
    try:
        child.receive(START_TIMEOUT_S)
        return child.request(request, TRIAL_TIMEOUT_S), launcher.level
    except Exception as exc:  # a child that did not start or answer: what it wrote says why
        return {"error": f"{type(exc).__name__}: {exc}; child's log: {child.log.text()[-1500:]}"}, launcher.level
    finally:
        child.kill()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--gib", type=float, default=6.0, help="the inputs' size, and the outputs'")
    parser.add_argument("--sandbox", default="auto", help="auto, bwrap, unshare or none, as KERNELGRADE_SANDBOX")
    parser.add_argument("--times", type=int, default=3)
    args = parser.parse_args(argv)
    if not torch.cuda.is_available():
        sys.exit("device_sharing.py needs a CUDA GPU")
    for run in range(args.times):
        with tempfile.TemporaryDirectory(prefix="kg-device-sharing-") as work:
            judge, child, notes = judge_trial(args.sandbox, args.gib, Path(work))
        print(f"run {run + 1}: {', '.join(notes)}")
        if "error" in child:
            print(f"  child: {child['error']}")
        for side, figures in (("judge", judge), ("child", child.get("seconds", {}))):
            for name, value in figures.items():
                print(f"  {side:6s} {name:45s} {value:8.3f} s")


if __name__ == "__main__":
    main()
