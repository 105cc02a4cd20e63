"""The stream held until a rep is enqueued: a slow host's dispatch stays out of device time, and a forward()
that waits for the device is found in warm-up and timed without the hold."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable

import pytest
import torch

from kernelgrade.evaluator import timing
from kernelgrade.evaluator.host import hold_watch
from kernelgrade.evaluator.request import TimingParams
from kernelgrade.evaluator.stream_hold import WATCHDOG_S

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
