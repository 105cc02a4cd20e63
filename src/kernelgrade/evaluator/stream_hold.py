"""Holding a CUDA stream until the host has enqueued a whole timed rep, so that host dispatch never lands in
device time, however busy the host is.

A timed rep enqueues its flush, start event, forward() and end event behind a wait on a word of pinned host
memory; the device starts the rep only when the host writes the word, after the end event is enqueued, and
then runs flush, start, call and end back to back. The wait is the driver's cuStreamWaitValue32, reached
through ctypes, so nothing is compiled and the evaluator needs no package beside torch. NVBench holds its
streams the same way, with a spinning kernel in place of the driver's wait.

A call that waits for the device itself (a synchronize, `.item()`, a blocking copy inside forward()) would
wait forever behind the hold, so a watchdog thread writes the word once WATCHDOG_S has passed; the rep is
then counted as released late, and the caller stops holding for the rest of its phase (warm-up finds such
calls before any timed rep). The watchdog thread is started with the hold, before any submission is loaded,
so the child's thread counts include it from the start.
"""

from __future__ import annotations

import ctypes
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

import torch

# A rep's host side (input copies, flush, forward()'s launches, two events) takes well under a millisecond on
# a quiet host and a few ms when a busy build host deschedules it; 250 ms means the call is waiting for the
# device (or the launch queue is full), and waiting longer would only make such a phase slower.
WATCHDOG_S = 0.25
_WAIT_GEQ = 0x0  # CU_STREAM_WAIT_VALUE_GEQ: the stream runs on once the word is >= the value
_DRIVER_NAMES = ("libcuda.so.1", "libcuda.so")


class HoldUnavailable(Exception):
    """The driver cannot hold a stream here (no libcuda, no stream memory operations): time without it."""


@dataclass(frozen=True)
class HoldReport:
    """What one held rep's release looked like: released by the host, or late, by the watchdog."""

    released_by_host: bool


class StreamHold:
    """One pinned word per device; `hold()` enqueues a wait for the next generation, `release()` writes it."""

    def __init__(self, device: torch.device) -> None:
        self.device = device
        self._wait = _wait_function()
        self._word = torch.zeros(1, dtype=torch.int32, pin_memory=True)
        self._store = ctypes.c_int32.from_address(self._word.data_ptr())
        self._generation = 0
        self._deadline: float | None = None
        self._closed = False
        self._cond = threading.Condition()
        self.released_late = 0
        self._thread = threading.Thread(target=self._watch, name="kernelgrade-stream-hold", daemon=True)
        self._thread.start()

    def hold(self, stream: int) -> None:
        """Enqueue, on `stream` (a cudaStream_t as an int), a wait until release() or the watchdog."""
        with self._cond:
            self._generation += 1
            status = self._wait(ctypes.c_void_p(stream), ctypes.c_uint64(self._word.data_ptr()),
                                ctypes.c_uint32(self._generation), ctypes.c_uint(_WAIT_GEQ))
            if status != 0:
                raise HoldUnavailable(f"cuStreamWaitValue32 returned CUresult {status}")
            self._deadline = time.monotonic() + WATCHDOG_S
            self._cond.notify()

    def release(self) -> HoldReport:
        with self._cond:
            by_host = self._deadline is not None
            self._open()
            return HoldReport(by_host)

    def close(self) -> None:
        with self._cond:
            self._open()
            self._closed = True
            self._cond.notify()

    def _open(self) -> None:
        """Write the current generation (the caller holds the lock): the device's wait ends."""
        self._store.value = self._generation
        self._deadline = None

    def _watch(self) -> None:
        with self._cond:
            while not self._closed:
                if self._deadline is None:
                    self._cond.wait()
                    continue
                remaining = self._deadline - time.monotonic()
                if remaining > 0:
                    self._cond.wait(remaining)
                    continue
                self._open()
                self.released_late += 1


def _wait_function() -> Callable[..., int]:
    library = _driver()
    for name in ("cuStreamWaitValue32_v2", "cuStreamWaitValue32"):
        function = getattr(library, name, None)
        if function is not None:
            function.restype = ctypes.c_int
            function.argtypes = (ctypes.c_void_p, ctypes.c_uint64, ctypes.c_uint32, ctypes.c_uint)
            wait: Callable[..., int] = function
            return wait
    raise HoldUnavailable("the CUDA driver exports no cuStreamWaitValue32")


def _driver() -> ctypes.CDLL:
    for name in _DRIVER_NAMES:
        try:
            return ctypes.CDLL(name)
        except OSError:
            continue
    raise HoldUnavailable("the CUDA driver library (libcuda.so.1) could not be loaded")
