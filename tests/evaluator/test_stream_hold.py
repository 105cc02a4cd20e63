"""The stream held until a rep is enqueued: a slow host's dispatch stays out of device time, and a forward()
that waits for the device is found in warm-up and timed without the hold."""

from __future__ import annotations

import ctypes
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch

from kernelgrade.evaluator import stream_hold, timing
from kernelgrade.evaluator.host import hold_watch
from kernelgrade.evaluator.request import TimingParams
from kernelgrade.evaluator.stream_hold import WATCHDOG_S, HoldUnavailable
from kernelgrade.evaluator.wire.hold_page import PAGE_NAME, HoldPage

SHORT = TimingParams(warmup_calls=3, warmup_ms=1.0, min_reps=20, max_reps=40, max_device_ms=1000.0,
                     max_wall_ms=10000.0, input_sets=1)
# Host time forward() spends between its two launches: far longer than the kernels and than the flush.
HOST_PAUSE_S = 0.003


Forward = Callable[[torch.Tensor], torch.Tensor]


def _timed(fn: Forward, device: torch.device, hold: bool) -> tuple[timing.RawSamples, timing.Holding]:
    x = torch.randn(1 << 16, device=device)
    if device.type == "cuda":
        timing.device_hold(device, hold_watch.own_page())
    holding = timing.Holding.for_device(device, hold)
    flusher = timing.Flusher(device, 64 * 1024 * 1024)
    with hold_watch.watch().watching(hold_watch.own_page()):
        timing.warm_up(fn, [[x]], device, SHORT, holding=holding)
        return timing.measure(fn, [[x]], device, SHORT, flusher, holding=holding), holding


def _slow_host(x: torch.Tensor) -> torch.Tensor:
    y = x * 2
    time.sleep(HOST_PAUSE_S)  # a descheduled judge, as on a host busy with builds
    return y + 1


def test_cpu_timing_says_the_hold_does_not_apply() -> None:
    raw, holding = _timed(lambda x: x + 1, torch.device("cpu"), True)
    assert holding.hold is None and raw.hold == "not applicable (CPU)" and raw.host_bound_reps == 0


@pytest.mark.gpu
def test_host_time_between_launches_stays_out_of_held_device_time() -> None:
    device = torch.device("cuda", 0)
    held, holding = _timed(_slow_host, device, True)
    assert holding.hold is not None and held.hold == timing.HELD
    assert statistics.median(held.device_ms) < HOST_PAUSE_S * 1000 / 10
    assert held.host_bound_reps == 0
    # Without the hold the pause is in every sample, and every rep is counted as host-bound.
    loose, _ = _timed(_slow_host, device, False)
    assert statistics.median(loose.device_ms) > HOST_PAUSE_S * 1000
    assert loose.host_bound_reps == len(loose.device_ms)


@pytest.mark.gpu
def test_a_forward_that_waits_for_the_device_stops_the_hold_in_warm_up() -> None:
    """In the judge's own process (the reference: PyTorch lets go of the GIL while it waits). A run child whose
    compiled code waits holding the GIL is let go by the judge from outside: the verdict case
    honest_waits_for_device_holding_gil."""

    def synchronizing(x: torch.Tensor) -> torch.Tensor:
        y = x * 2
        torch.cuda.synchronize()
        return y

    started = time.monotonic()
    raw, holding = _timed(synchronizing, torch.device("cuda", 0), True)
    assert holding.hold is None and raw.hold.startswith("off: forward() waited for the device")
    # One warm-up rep waited for the watchdog; the timed reps did not.
    assert time.monotonic() - started < 20 * WATCHDOG_S
    assert len(raw.device_ms) >= SHORT.min_reps


class _Driver:
    """The driver calls a page's registration makes, as a host whose driver refuses a page file on disk unless it
    is registered read-only (driver 580, CUDA 13); `sees_writes`: whether its device then reads what the host
    writes. The device's address of the page is its host address, as with unified addressing."""

    def __init__(self, page: HoldPage, sees_writes: bool) -> None:
        self.page, self.sees_writes = page, sees_writes
        self.flags: list[int] = []
        self.unregistered = 0
        self.snapshot = b""
        # Attributes the registration can set restype and argtypes on, as on a ctypes function.
        self.cuMemHostRegister_v2 = _Settable(self._register)
        self.cuMemHostGetDevicePointer_v2 = _Settable(self._device_pointer)
        self.cuMemcpyDtoH_v2 = _Settable(self._copy)
        self.cuMemHostUnregister = _Settable(self._unregister)

    def _register(self, address: ctypes.c_void_p, size: ctypes.c_size_t, flags: ctypes.c_uint) -> int:
        self.flags.append(flags.value)
        if not flags.value & 0x08:
            return 1
        self.snapshot = bytes(self.page.memory[:])
        return 0

    def _device_pointer(self, pointer: Any, address: ctypes.c_void_p, flags: ctypes.c_uint) -> int:
        ctypes.cast(pointer, ctypes.POINTER(ctypes.c_uint64)).contents.value = address.value or 0
        return 0

    def _copy(self, dst: ctypes.c_void_p, src: ctypes.c_uint64, size: ctypes.c_size_t) -> int:
        offset = src.value - self.page.address
        source = bytes(self.page.memory[:]) if self.sees_writes else self.snapshot
        ctypes.memmove(dst.value, source[offset:offset + size.value], size.value)
        return 0

    def _unregister(self, address: ctypes.c_void_p) -> int:
        self.unregistered += 1
        return 0


class _Settable:
    def __init__(self, method: Callable[..., int]) -> None:
        self.method = method

    def __call__(self, *args: Any) -> int:
        return self.method(*args)


def _driver(tmp_path: Path, sees_writes: bool) -> _Driver:
    return _Driver(HoldPage.create(tmp_path / PAGE_NAME), sees_writes)


def test_a_page_file_the_driver_will_not_pin_writable_is_registered_read_only(tmp_path: Path) -> None:
    driver = _driver(tmp_path, sees_writes=True)
    assert stream_hold._registered(driver, driver.page) == driver.page.address  # type: ignore[arg-type]
    assert driver.flags == [0x02, 0x02 | 0x08] and driver.unregistered == 0


def test_a_read_only_page_whose_writes_the_device_does_not_see_holds_nothing(tmp_path: Path) -> None:
    driver = _driver(tmp_path, sees_writes=False)
    with pytest.raises(HoldUnavailable, match="did not read what the host wrote"):
        stream_hold._registered(driver, driver.page)  # type: ignore[arg-type]
    assert driver.unregistered == 1


@pytest.mark.gpu
def test_a_page_file_made_as_for_a_run_child_holds_the_stream(tmp_path: Path) -> None:
    """The run children's page is a file in their work dir (docs/timing.md, "Known gap"). A page the device does
    not read after the host writes it would leave every warm-up rep to the watch, and warm-up would stop holding."""
    device = torch.device("cuda", 0)
    x = torch.randn(1 << 16, device=device)
    page = HoldPage.create(tmp_path / PAGE_NAME)
    # Raises HoldUnavailable where the driver will not register it, or registers it for no use.
    holding = timing.Holding(stream_hold.StreamHold(page), timing.HELD)
    with hold_watch.watch().watching(page):
        timing.warm_up(_slow_host, [[x]], device, SHORT, holding=holding)
        held = timing.measure(_slow_host, [[x]], device, SHORT, timing.Flusher(device, 64 * 1024 * 1024),
                              holding=holding)
    assert held.hold == timing.HELD and held.host_bound_reps == 0
    assert statistics.median(held.device_ms) < HOST_PAUSE_S * 1000 / 10
