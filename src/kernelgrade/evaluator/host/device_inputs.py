"""A trial's inputs made on the judge's GPU: get_inputs() run with its large draws kept there (device_draws.py),
so that what it does with them runs there too. KernelBench's 94_MSELoss scales a 4 GiB input
(`torch.rand(...) * scale`), 93_masked_cumsum turns 8 GiB of int64 into a boolean mask and 98_KLDivLoss takes
softmaxes of its inputs: on the judge's CPU each made a fresh pageable tensor of gigabytes on one core, per trial.
The values come back to the host once, into pinned memory (every caller of the inputs takes them from there: the
run child, the float64 oracle), and the tensors left on the device are the copies the reference runs on.

The draws give the values the usual way gives (the same generator, chunks and order); what get_inputs() computes
from them may differ in the last bits (a softmax on the GPU), which changes only which values a trial has, as its
seed does. A problem whose code cannot take device tensors (it mixes them with CPU ones, hands them to numpy,
returns them in a container) has its inputs drawn the usual way from then on; one that runs the device out of
memory here, this once.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import torch

from kernelgrade.evaluator import device_draws
from kernelgrade.evaluator.device_cache import leave_room
from kernelgrade.evaluator.host.seeded_draws import SeededDraws

log = logging.getLogger(__name__)


class DeviceInputs:
    """One problem's trial inputs made on its GPU, while its code allows."""

    def __init__(self, name: str, draws: SeededDraws, device: torch.device) -> None:
        self.name, self.device = name, device
        self._draws = draws
        self.allowed = True

    def made(self, seed: int, get_inputs: Callable[[], list[Any]]) -> tuple[list[Any], list[Any]] | None:
        """(the inputs on the host, copies on the device for the reference to run on); None where they are to be
        made the usual way."""
        if not self.allowed:
            return None
        try:
            values = self._draws.run(seed, get_inputs, on=self.device, kept=True)
        except torch.cuda.OutOfMemoryError:
            leave_room(self.device)
            return None
        except Exception as exc:  # the problem's own code, on device tensors
            self._refuse(f"its get_inputs() fails on device tensors: {exc!r}"[:300])
            return None
        landed = landed_on_host(values, self.device)
        if landed is None:
            self._refuse("it returns device tensors in a container")
        return landed

    def _refuse(self, why: str) -> None:
        self.allowed = False
        log.info("problem %s draws its inputs on the host: %s", self.name, why)


def landed_on_host(values: list[Any], device: torch.device) -> tuple[list[Any], list[Any]] | None:
    """get_inputs()'s values as (host values, device copies for the reference): a device tensor is copied to the
    host and left as the reference's copy, unless it shares its memory with a value before it (the reference
    must not see a write into one change another); a CPU tensor is copied to the device. None where a container
    holds a device tensor."""
    host: list[Any] = []
    placed: list[Any] = []
    storages: set[int] = set()
    for value in values:
        if not isinstance(value, torch.Tensor):
            if _holds_device_tensor(value):
                return None
            host.append(value)
            placed.append(value)
        elif value.device.type == "cpu":
            host.append(value)
            placed.append(value.to(device, copy=True))
        else:
            storage = value.untyped_storage().data_ptr()
            host.append(_on_host(value))
            placed.append(value.detach().clone() if storage in storages else value)
            storages.add(storage)
    return host, placed


def _on_host(value: torch.Tensor) -> torch.Tensor:
    out = device_draws.host_tensor(tuple(value.shape), value.dtype, value.device)
    out.copy_(value.detach())
    return out.requires_grad_(value.requires_grad)


def _holds_device_tensor(value: object) -> bool:
    if isinstance(value, torch.Tensor):
        return value.device.type != "cpu"
    if isinstance(value, list | tuple):
        return any(_holds_device_tensor(v) for v in value)
    if isinstance(value, dict):
        return any(_holds_device_tensor(v) for v in value.values())
    return False
