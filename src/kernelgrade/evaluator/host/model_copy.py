"""A copy of the reference model that is wholly its own (the float64 oracle's, a lower-precision emulation's),
holding the reference's current tensor values.

The copy is constructed afresh, not deep-copied: a deepcopy would leave a function the model holds
(`self.mlpf = lambda x: m.c_proj(x)` over a submodule `m`) calling the reference's own fp32 layers from the
float64 copy. Constructed as the reference was (on the host, under the weight seed), it drew every weight
again only to overwrite it: 4 GiB of them took 6-8 s for KernelBench's 55_Matmul_MaxPool_Sum_Scale, on every
verdict whose oracle ran. So the copy is first constructed as a shell on the meta device, where nothing is
drawn or stored, given storage on its device and then the reference's values. Where the shell cannot stand
for a fresh construction (its constructor reads tensor values, it holds a tensor the reference does not give
it, its plain settings differ from the reference's), the copy is constructed on the host as before.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import torch

# Settings a constructor stores that a shell must share with the reference; other objects (functions,
# modules, tensors) are not compared.
_PLAIN = (bool, int, float, str, type(None))


def copy_model(model: torch.nn.Module, construct: Callable[[], torch.nn.Module],
               seeded: Callable[[], torch.nn.Module], device: torch.device) -> torch.nn.Module:
    """`model`'s copy on `device`. `construct`: calls the problem's constructor; `seeded`: constructs the model as
    the reference was (under the weight seed, on the host)."""
    theirs = dict(model.named_modules())
    shell = _shell(construct, theirs, device)
    if shell is not None:
        return shell
    fresh = seeded().to(device)
    if set(theirs) != {name for name, _ in fresh.named_modules()}:
        return copy.deepcopy(model)  # a model whose layers depend on more than its seed
    return _given_values(fresh, theirs)


def _shell(construct: Callable[[], torch.nn.Module], theirs: dict[str, torch.nn.Module],
           device: torch.device) -> torch.nn.Module | None:
    # Unseeded: nothing is drawn on the meta device (and a seeded draw there would send the problem's later
    # draws the slow way, seeded_draws.py); a setting drawn from Python's own generator shows as a difference.
    try:
        with torch.device("meta"):
            shell = construct()
    except Exception:  # a constructor that needs real values (.item(), a data-dependent shape)
        return None
    mine = dict(shell.named_modules())
    if set(mine) != set(theirs) or not all(_stands_for(m, theirs[name]) for name, m in mine.items()):
        return None
    shell = _given_values(shell.to_empty(device=device), theirs)
    return None if any(_holds_meta(v) for m in shell.modules() for v in vars(m).values()) else shell


def _given_values(copy: torch.nn.Module, theirs: dict[str, torch.nn.Module]) -> torch.nn.Module:
    """`copy` with each of its modules given the values of the reference's module of the same name."""
    with torch.no_grad():
        for name, module in copy.named_modules():
            _take_tensors(module, theirs[name])
    return copy


def _stands_for(module: torch.nn.Module, source: torch.nn.Module) -> bool:
    """Every parameter and buffer of `module` has its value in `source` (same shape), and its plain settings
    are `source`'s."""
    for table in ("_parameters", "_buffers"):
        theirs = getattr(source, table)
        for key, value in getattr(module, table).items():
            other = theirs.get(key)
            if value is not None and (other is None or tuple(other.shape) != tuple(value.shape)):
                return False
    plain = {k: v for k, v in vars(module).items() if isinstance(v, _PLAIN) and k != "training"}
    return all(k in vars(source) and vars(source)[k] == v for k, v in plain.items())


def _holds_meta(value: Any) -> bool:
    if isinstance(value, torch.Tensor):
        return value.is_meta
    if isinstance(value, (list, tuple)):
        return any(_holds_meta(v) for v in value)
    if isinstance(value, dict):
        return any(_holds_meta(v) for v in value.values())
    return False


def _take_tensors(module: torch.nn.Module, source: torch.nn.Module) -> None:
    """`module` gets copies of `source`'s own parameters', buffers' and tensor attributes' values."""
    for table in ("_parameters", "_buffers"):
        mine, theirs = getattr(module, table), getattr(source, table)
        for key, value in theirs.items():
            if value is not None and mine.get(key) is not None and mine[key].shape == value.shape:
                mine[key].copy_(value)
    for key, value in vars(source).items():
        if isinstance(value, torch.Tensor):
            setattr(module, key, value.detach().clone())
