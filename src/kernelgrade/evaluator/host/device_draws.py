"""Large random inputs drawn on the judge's GPU and handed to get_inputs() as the CPU tensors it asked for.

torch draws a CPU tensor serially from one Mersenne Twister, about 0.4-0.5 GB/s: a KernelBench level 1 problem's
8 GiB input took 15-20 s to draw, for every correctness trial and timing set, and drawing was most of the
time a sweep spent on such problems. A GPU's counter-based generator draws the same distribution at memory
speed. So `torch.rand`, `torch.randn` and `torch.randint` calls for at least DEVICE_DRAW_MIN elements are drawn
on the judge's device, a chunk at a time (so the device holds one chunk more, not the tensor), and copied into
the CPU tensor get_inputs() gets: its code sees what it always saw. The values are fixed by the seed and the
device class, as the reference's outputs already are; they are not those a CPU draw would give, which nothing
needs. The layers a reference builds are never drawn here: the run child builds ModelNew's on the CPU, and the
weights must match.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

# Below this many elements a CPU draw takes under 10 ms; a GPU draw's launch and copy would not gain.
DEVICE_DRAW_MIN = 1 << 20
# Elements drawn on the device at a time: 256 MiB of fp32, 512 MiB of int64 beside the judge's own tensors.
# Fixed, because it decides the values: the generator's stream is drawn in chunks of this size.
DEVICE_DRAW_CHUNK = 1 << 26

_FACTORIES: frozenset[Callable[..., Any]] = frozenset({torch.rand, torch.randn, torch.randint})
_KNOWN_KWARGS = frozenset({"size", "dtype", "device", "requires_grad", "pin_memory", "layout", "generator"})


def drawn(func: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any], device: torch.device,
          generator: torch.Generator) -> torch.Tensor | None:
    """The CPU tensor `func(*args, **kwargs)` asks for, drawn on `device` with `generator`; None where the call
    is not one this handles (another function, an unknown argument, a small or non-strided tensor)."""
    if func not in _FACTORIES or not set(kwargs) <= _KNOWN_KWARGS:
        return None
    if kwargs.get("layout") not in (None, torch.strided):
        return None
    parsed = _size(func, args, kwargs)
    if parsed is None:
        return None
    leading, size = parsed
    dtype = kwargs.get("dtype") or (torch.int64 if func is torch.randint else torch.get_default_dtype())
    out = torch.empty(size, dtype=dtype, pin_memory=bool(kwargs.get("pin_memory", False)))
    if out.numel() < DEVICE_DRAW_MIN:
        return None
    flat = out.view(-1)
    for start in range(0, flat.numel(), DEVICE_DRAW_CHUNK):
        count = min(DEVICE_DRAW_CHUNK, flat.numel() - start)
        flat[start:start + count].copy_(func(*leading, (count,), dtype=dtype, device=device, generator=generator))
    return out.requires_grad_(bool(kwargs.get("requires_grad", False)))


def _size(func: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]
          ) -> tuple[tuple[int, ...], tuple[int, ...]] | None:
    """(the arguments before the size, the size): `rand(2, 3)`, `rand((2, 3))`, `rand(size=(2, 3))`,
    `randint(10, (2, 3))`, `randint(0, 10, (2, 3))`; None for any other form."""
    values = [*args, kwargs["size"]] if "size" in kwargs else list(args)
    if func is torch.randint:
        if len(values) not in (2, 3):
            return None
        *leading, size = values
    elif len(values) == 1 and isinstance(values[0], tuple | list | torch.Size):
        leading, size = [], values[0]
    else:
        leading, size = [], values
    shape = _shape(size)
    if shape is None or not all(_is_int(v) for v in leading):
        return None
    return tuple(leading), shape


def _shape(value: Any) -> tuple[int, ...] | None:
    if isinstance(value, tuple | list | torch.Size) and all(_is_int(v) for v in value):
        return tuple(value)
    return None


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)
