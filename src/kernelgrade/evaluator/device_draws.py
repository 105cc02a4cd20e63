"""Large random CPU tensors of a CUDA problem drawn on its GPU: the inputs get_inputs() makes, and the weights its
model's constructor draws, on the judge's side and the run child's alike.

torch draws a CPU tensor serially from one Mersenne Twister, about 0.4-0.5 GB/s. A KernelBench level 1
problem's 8 GiB input took 15-20 s to draw, for every correctness trial and timing set; 55_Matmul_MaxPool_Sum_Scale's
4 GiB of weights took 7 s, three times per verdict (the judge's reference, the reference's timing child, the
candidate's run child). A GPU's counter-based generator draws the same distribution at memory speed.

Inputs: `torch.rand`, `torch.randn` and `torch.randint` calls for at least DEVICE_DRAW_MIN elements are drawn on
the judge's device, a chunk at a time (so the device holds one chunk more, not the tensor), and copied into the CPU
tensor get_inputs() gets: its code sees what it always saw.

Weights: while a model is constructed under `weights_drawn()`, an in-place `uniform_` or `normal_` of at least
DEVICE_DRAW_MIN elements of a contiguous CPU tensor, from the seeded generator, is drawn on the device with a
generator of its own seeded alike, and copied into that tensor (torch.nn.init's functions end in those two). It is
caught below the Python API, in a torch dispatch mode, so a layer's own init, nn.init and a direct call draw alike
whichever way the code reached them. The judge's Model and the child's ModelNew are constructed that way under the
same seed, so layers built alike still start with equal weights.

The values are fixed by the seed, the chunk size, the device class and the order of the draws, as the
reference's outputs already are; they are not those a CPU draw would give, which nothing needs.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode

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


# Part of the key of everything stored that depends on the values drawn: 2 since a CUDA problem's weights are drawn
# on its device (trial_store.py), so that nothing computed with CPU-drawn weights is taken for what they give now.
DRAW_SCHEME = 2


def weights_device(device: torch.device) -> torch.device | None:
    """Where a model run on `device` draws its large weights: its GPU, or None (on the CPU, as torch does). The
    judge and the run child both ask here, so that they construct alike."""
    return device if device.type == "cuda" else None


# The in-place draws that nn.init's functions end in. Fixed: a weight drawn one way on one side and another way on
# the other would start unequal.
_IN_PLACE = frozenset({torch.ops.aten.uniform_.default, torch.ops.aten.normal_.default})


def weights_drawn(device: torch.device | None, seed: int) -> contextlib.AbstractContextManager[object]:
    """Where `device` is one, a context within which a constructor's large weights are drawn on it (_WeightDraws);
    else one that changes nothing."""
    return _WeightDraws(device, seed) if device is not None else contextlib.nullcontext()


def drawn_as_weight(tensor: object) -> bool:
    """Whether an in-place draw of `tensor` with no generator is drawn on the device under weights_drawn()."""
    return isinstance(tensor, torch.Tensor) and tensor.device.type == "cpu" and tensor.is_contiguous() \
        and tensor.numel() >= DEVICE_DRAW_MIN


class _WeightDraws(TorchDispatchMode):  # type: ignore[no-untyped-call]  # torch's mode is untyped
    """Within it, large in-place draws of CPU tensors that name no generator (they would take torch's global one)
    are drawn on `device` with a generator seeded with `seed`, DEVICE_DRAW_CHUNK elements at a time. A draw from
    a generator of its own, a small or non-contiguous tensor, and everything else run as they would. (The judge's
    private generator of seeded_draws.py is left out of the draws this takes: a dispatch mode cannot tell it from
    the problem's own, it sees a new wrapper of either.)"""

    def __init__(self, device: torch.device, seed: int) -> None:
        super().__init__()  # type: ignore[no-untyped-call]
        self.device = device
        self.generator = torch.Generator(device=device).manual_seed(seed)

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        kwargs = kwargs or {}
        if func in _IN_PLACE and kwargs.get("generator") is None and drawn_as_weight(args[0]):
            return self._drawn(func, args[0], args[1:])
        return func(*args, **kwargs)

    def _drawn(self, func: Any, tensor: torch.Tensor, params: tuple[Any, ...]) -> torch.Tensor:
        flat = tensor.view(-1)
        chunks = ((start, min(DEVICE_DRAW_CHUNK, flat.numel() - start))
                  for start in range(0, flat.numel(), DEVICE_DRAW_CHUNK))
        drawn = ((flat[start:start + count],
                  func(torch.empty(count, dtype=tensor.dtype, device=self.device), *params, generator=self.generator))
                 for start, count in chunks)
        _copy_back(drawn, self.device)
        return tensor


def _copy_back(pieces: Iterator[tuple[torch.Tensor, torch.Tensor]], device: torch.device) -> None:
    """Each (CPU slice, device piece) copied into place. From a GPU, through two pinned buffers in turn: a piece's
    copy to the host runs while the one before it is copied into its place, which is pageable memory touched for
    the first time (a direct copy there took 2.9 s for 4 GiB on an H200; the draw itself, 3 ms)."""
    if device.type != "cuda":
        for target, piece in pieces:
            target.copy_(piece)
        return
    buffers: list[torch.Tensor] = []
    landing: tuple[torch.cuda.Event, torch.Tensor, torch.Tensor] | None = None
    for k, (target, piece) in enumerate(pieces):
        if len(buffers) < 2:
            buffers.append(torch.empty(piece.numel(), dtype=piece.dtype, pin_memory=True))
        staged = buffers[k % 2][:piece.numel()]
        staged.copy_(piece, non_blocking=True)
        event = torch.cuda.Event()  # type: ignore[no-untyped-call]
        event.record(torch.cuda.current_stream(device))
        if landing is not None:
            _land(*landing)
        landing = (event, staged, target)
    if landing is not None:
        _land(*landing)


def _land(event: torch.cuda.Event, staged: torch.Tensor, target: torch.Tensor) -> None:
    event.synchronize()
    target.copy_(staged)
