"""Holding a CUDA stream until the host has enqueued a whole timed rep, so that host dispatch never lands in
device time, however busy the host is.

A timed rep enqueues its flush, start event, forward() and end event behind a wait on a word of a shared,
CUDA-registered page (wire/hold_page.py); the device starts the rep only when the host writes the word,
after the end event is enqueued, and then runs flush, start, call and end back to back. The wait is the
driver's cuStreamWaitValue32, reached through ctypes, so nothing is compiled and the evaluator needs no
package beside torch. NVBench holds its streams the same way, with a spinning kernel in place of the
driver's wait.

A call that waits for the device itself (a synchronize, `.item()`, a blocking copy inside forward()) would
wait forever behind the hold, so each held rep carries a deadline WATCHDOG_S ahead, and the judge's watch
(host/hold_watch.py, another thread or, for a run child, another process) writes the word for a rep still
held past it. Such a rep is counted as released late, and the timing loop stops holding for the rest of its
phase (warm-up finds such calls before any timed rep).
"""

from __future__ import annotations

import ctypes
import time
from collections.abc import Callable
from dataclasses import dataclass

from kernelgrade.evaluator.wire.hold_page import PAGE_BYTES, HoldPage

# A rep's host side (input copies, flush, forward()'s launches, two events) takes well under a millisecond on
# a quiet host and a few ms when a busy build host deschedules it; 250 ms means the call is waiting for the
# device (or the launch queue is full), and waiting longer would only make such a phase slower.
WATCHDOG_S = 0.25
_WAIT_GEQ = 0x0  # CU_STREAM_WAIT_VALUE_GEQ: the stream runs on once the word is >= the value
_DEVICEMAP = 0x02  # CU_MEMHOSTREGISTER_DEVICEMAP
_READ_ONLY = 0x08  # CU_MEMHOSTREGISTER_READ_ONLY: the device only reads the page, as the stream wait does
_INVALID_VALUE = 1  # CUDA_ERROR_INVALID_VALUE
# A word of the page past its layout (wire/hold_page.py), written by the host and read back through the device's
# mapping to check that the device sees the host's writes.
_PROBE_OFFSET = 64
_DRIVER_NAMES = ("libcuda.so.1", "libcuda.so")


class HoldUnavailable(Exception):
    """The driver cannot hold a stream here (no libcuda, no stream memory operations): time without it."""


@dataclass(frozen=True)
class HoldReport:
    """How one held rep was let go: by the timing loop, or late, by the judge's watch."""

    released_by_host: bool


class StreamHold:
    """Holds streams on one page; `hold()` enqueues a wait for the next generation, `release()` writes it."""

    def __init__(self, page: HoldPage) -> None:
        driver = _driver()
        self.page = page
        self._wait = _function(driver, ("cuStreamWaitValue32_v2", "cuStreamWaitValue32"),
                               (ctypes.c_void_p, ctypes.c_uint64, ctypes.c_uint32, ctypes.c_uint))
        self._device_pointer = _registered(driver, page)
        self._generation = page.released

    def hold(self, stream: int) -> None:
        """Enqueue, on `stream` (a cudaStream_t as an int), a wait until release() or the watch."""
        self._generation += 1
        self.page.arm(self._generation, time.monotonic_ns() + int(WATCHDOG_S * 1e9))
        status = self._wait(ctypes.c_void_p(stream), ctypes.c_uint64(self._device_pointer),
                            ctypes.c_uint32(self._generation), ctypes.c_uint(_WAIT_GEQ))
        if status != 0:
            self.page.release(self._generation)
            raise HoldUnavailable(f"cuStreamWaitValue32 returned CUresult {status}")

    def release(self) -> HoldReport:
        return HoldReport(self.page.release(self._generation))


def _registered(driver: ctypes.CDLL, page: HoldPage) -> int:
    """The device's address of the page, registered with the CUDA context current on this thread. A page file on
    disk, as a run child maps it, is registered read-only where the driver refuses it otherwise: with driver 580
    and CUDA 13 on H100 and H200 hosts, `cuMemHostRegister` answered CUDA_ERROR_INVALID_VALUE for it with any
    other flags (an anonymous page, the judge's own, registers either way), and the device never writes it."""
    register = _function(driver, ("cuMemHostRegister_v2", "cuMemHostRegister"),
                         (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_uint))
    address, size = ctypes.c_void_p(page.address), ctypes.c_size_t(PAGE_BYTES)
    status = register(address, size, ctypes.c_uint(_DEVICEMAP))
    read_only = status == _INVALID_VALUE
    if read_only:
        status = register(address, size, ctypes.c_uint(_DEVICEMAP | _READ_ONLY))
    if status != 0:
        raise HoldUnavailable(f"cuMemHostRegister returned CUresult {status}")
    try:
        pointer = _device_pointer(driver, page)
        if read_only:
            _check_seen(driver, page, pointer)
    except HoldUnavailable:
        _function(driver, ("cuMemHostUnregister",), (ctypes.c_void_p,))(address)
        raise
    return pointer


def _device_pointer(driver: ctypes.CDLL, page: HoldPage) -> int:
    pointer = ctypes.c_uint64(0)
    translate = _function(driver, ("cuMemHostGetDevicePointer_v2", "cuMemHostGetDevicePointer"),
                          (ctypes.POINTER(ctypes.c_uint64), ctypes.c_void_p, ctypes.c_uint))
    status = translate(ctypes.byref(pointer), ctypes.c_void_p(page.address), ctypes.c_uint(0))
    if status != 0:
        raise HoldUnavailable(f"cuMemHostGetDevicePointer returned CUresult {status}")
    return int(pointer.value)


def _check_seen(driver: ctypes.CDLL, page: HoldPage, pointer: int) -> None:
    """That the device reads what the host writes to the page after it was registered: two values written to a
    spare word and each copied back through the device's address of the page. A stream wait on a page whose
    writes the device did not see would wait forever; a copy cannot."""
    copy = _function(driver, ("cuMemcpyDtoH_v2", "cuMemcpyDtoH"),
                     (ctypes.c_void_p, ctypes.c_uint64, ctypes.c_size_t))
    word = ctypes.c_uint32.from_buffer(page.memory, _PROBE_OFFSET)
    seen = ctypes.c_uint32(0)
    for value in (0x4B470001, 0x4B470002):
        word.value = value
        status = copy(ctypes.c_void_p(ctypes.addressof(seen)), ctypes.c_uint64(pointer + _PROBE_OFFSET),
                      ctypes.c_size_t(4))
        if status != 0 or seen.value != value:
            raise HoldUnavailable(f"the page was registered read-only, but the device did not read what the host"
                                  f" wrote to it (cuMemcpyDtoH returned CUresult {status})")


def _function(driver: ctypes.CDLL, names: tuple[str, ...], argtypes: tuple[object, ...]) -> Callable[..., int]:
    for name in names:
        function = getattr(driver, name, None)
        if function is not None:
            function.restype = ctypes.c_int
            function.argtypes = argtypes
            found: Callable[..., int] = function
            return found
    raise HoldUnavailable(f"the CUDA driver exports none of {', '.join(names)}")


def _driver() -> ctypes.CDLL:
    for name in _DRIVER_NAMES:
        try:
            return ctypes.CDLL(name)
        except OSError:
            continue
    raise HoldUnavailable("the CUDA driver library (libcuda.so.1) could not be loaded")
