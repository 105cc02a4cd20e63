"""Large random CPU tensors of a CUDA problem drawn on its GPU: the inputs get_inputs() makes, and the weights its
model's constructor draws, on the judge's side and the run child's alike.

torch draws a CPU tensor serially from one Mersenne Twister, about 0.4-0.5 GB/s. A KernelBench level 1
problem's 8 GiB input took 15-20 s to draw, for every correctness trial and timing set; 55_Matmul_MaxPool_Sum_Scale's
4 GiB of weights took 7 s, three times per verdict (the judge's reference, the reference's timing child, the
candidate's run child). A GPU's counter-based generator draws the same distribution at memory speed.

Inputs: `torch.rand`, `torch.randn` and `torch.randint` calls for at least DEVICE_DRAW_MIN elements are drawn on
the judge's device, a chunk at a time (so the device holds one chunk more, not the tensor), and copied into the CPU
tensor get_inputs() gets, in pinned memory: its code sees what it always saw. A trial's are left on the device
instead, alike, for get_inputs() to go on with there (`kept`, host/device_inputs.py).

Weights: while a model is constructed under `weights_drawn()`, a call of torch.nn.init's (where a layer's own init
ends) or a tensor's own `uniform_` or `normal_` that draws a contiguous CPU tensor of at least DEVICE_DRAW_MIN
elements from the global generator is made on the device with a generator of its own, seeded alike, and the values
are copied into that tensor; so is a `torch.rand`, `torch.randn` or `torch.randint` of a CPU tensor that large
(`nn.Parameter(torch.randn(8192, 8192))` took 0.6 s on the CPU's generator). The constructor still sees CPU
tensors. The judge's Model and the child's ModelNew are constructed that way under the same seed, so layers built
alike still start with equal weights.

The values are fixed by the seed, the device class, the order of the draws and, for inputs, the chunk size, as
the reference's outputs already are; they are not those a CPU draw would give, which nothing needs.
"""

from __future__ import annotations

import contextlib
import ctypes
import inspect
import math
import mmap
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeGuard

import torch
from torch.overrides import TorchFunctionMode

from kernelgrade.evaluator import device_cache, pinned_buffers
from kernelgrade.evaluator.wire import staging
from kernelgrade.evaluator.wire.pinning import libc

# Below this many elements a CPU draw takes under 10 ms; a GPU draw's launch and copy would not gain.
DEVICE_DRAW_MIN = 1 << 20
# Elements drawn on the device at a time: 256 MiB of fp32, 512 MiB of int64 beside the judge's own tensors.
# Fixed, because it decides the values: the generator's stream is drawn in chunks of this size.
DEVICE_DRAW_CHUNK = 1 << 26
# The largest input drawn into a block of torch's caching host allocator. It pins whole powers of two, so a 9 GiB
# input would pin 16 GiB, five times an evaluation (two trials, three timing sets), memory the host cannot swap;
# up to 1 GiB the rounding costs less than 0.5 GiB a block. Larger inputs get a buffer of their exact size
# (pinned_buffers.py).
PINNED_INPUT_MAX_BYTES = 1 << 30

_FACTORIES: frozenset[Callable[..., Any]] = frozenset({torch.rand, torch.randn, torch.randint})
_KNOWN_KWARGS = frozenset({"size", "dtype", "device", "requires_grad", "pin_memory", "layout", "generator"})


@dataclass(frozen=True)
class _Factory:
    """A factory call of a form this module draws on a device: `func(*leading, shape, dtype=dtype)`."""

    func: Callable[..., Any]
    leading: tuple[int, ...]
    shape: tuple[int, ...]
    dtype: torch.dtype
    pinned: bool
    requires_grad: bool

    def empty(self) -> torch.Tensor:
        """The CPU tensor the call returns, not yet drawn."""
        return torch.empty(self.shape, dtype=self.dtype, pin_memory=self.pinned)

    def draw(self, shape: tuple[int, ...], device: torch.device, generator: torch.Generator) -> torch.Tensor:
        made: torch.Tensor = self.func(*self.leading, shape, dtype=self.dtype, device=device, generator=generator)
        return made


def _factory(func: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> _Factory | None:
    """The call as a _Factory; None where it is not one this handles (another function, an unknown argument, a
    small or non-strided tensor)."""
    if func not in _FACTORIES or not set(kwargs) <= _KNOWN_KWARGS:
        return None
    if kwargs.get("layout") not in (None, torch.strided):
        return None
    parsed = _size(func, args, kwargs)
    if parsed is None or math.prod(parsed[1]) < DEVICE_DRAW_MIN:
        return None
    dtype = kwargs.get("dtype") or (torch.int64 if func is torch.randint else torch.get_default_dtype())
    return _Factory(func, *parsed, dtype, bool(kwargs.get("pin_memory", False)),
                    bool(kwargs.get("requires_grad", False)))


def drawn(func: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any], device: torch.device,
          generator: torch.Generator, kept: bool = False) -> torch.Tensor | None:
    """The CPU tensor `func(*args, **kwargs)` asks for, drawn on `device` with `generator` a chunk at a time;
    None where the call is not one this handles. `kept`: the tensor stays on `device`, the values alike
    (host/device_inputs.py)."""
    factory = _factory(func, args, kwargs)
    if factory is None:
        return None
    out = torch.empty(factory.shape, dtype=factory.dtype, device=device) if kept else _input_tensor(factory, device)
    flat = out.view(-1)
    for start in range(0, flat.numel(), DEVICE_DRAW_CHUNK):
        count = min(DEVICE_DRAW_CHUNK, flat.numel() - start)
        flat[start:start + count].copy_(factory.draw((count,), device, generator))
    return out.requires_grad_(factory.requires_grad)


def _input_tensor(factory: _Factory, device: torch.device) -> torch.Tensor:
    """The CPU tensor an input draw fills: pinned where it is drawn on a GPU, as the call asked otherwise."""
    if factory.pinned:
        return factory.empty()
    return host_tensor(factory.shape, factory.dtype, device)


def host_tensor(shape: tuple[int, ...], dtype: torch.dtype, device: torch.device) -> torch.Tensor:
    """A CPU tensor for values that come from `device`: pinned where it is a GPU. An input crosses between host
    and device several times per trial (drawn, copied for the reference and for the float64 oracle); on an H200
    host, 0.5 GiB took 0.36 s to come back into pageable memory and 0.08 s to go out again, 0.01 s each way
    pinned. Up to PINNED_INPUT_MAX_BYTES it comes from torch's caching host allocator: pinning a new block took
    0.25 s, once, as the trials after it reuse the blocks the trials before freed
    (device_cache.release_pinned() hands the unused ones back once many were made). Larger, from a pool of
    buffers of exact sizes (pinned_buffers.py). Where pinning is refused: pageable memory backed by huge pages."""
    out = _pinned(shape, dtype) if device.type == "cuda" else None
    if out is None:
        out = torch.empty(shape, dtype=dtype)
        back_with_huge_pages(out)
    return out


def _pinned(shape: tuple[int, ...], dtype: torch.dtype) -> torch.Tensor | None:
    try:
        if math.prod(shape) * dtype.itemsize > PINNED_INPUT_MAX_BYTES:
            return pinned_buffers.pool().empty(shape, dtype)
        return device_cache.pinned_empty(shape, dtype)
    except (RuntimeError, OSError):  # pinning or mapping refused
        return None


def draws_on(args: tuple[Any, ...], kwargs: dict[str, Any]) -> torch.device:
    """The device a random call draws on: its `device`, else its first tensor's (`out` and `mean` included),
    else torch's default."""
    if kwargs.get("device") is not None:
        return torch.device(kwargs["device"])
    for value in (*args, *kwargs.values()):
        if isinstance(value, torch.Tensor):
            return value.device
    return torch.get_default_device()


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


# Part of the key of everything stored that depends on the values drawn (trial_store.py), so that nothing computed
# with weights drawn otherwise is taken for what they give now: 2 since a CUDA problem's weights are drawn on its
# device, 3 since a constructor's large rand, randn and randint are too.
DRAW_SCHEME = 3


def weights_device(device: torch.device) -> torch.device | None:
    """Where a model run on `device` draws its large weights: its GPU, or None (on the CPU, as torch does). The
    judge and the run child both ask here, so that they construct alike."""
    return device if device.type == "cuda" else None


def _initializers() -> frozenset[Callable[..., Any]]:
    """torch.nn.init's public functions that take a generator: what a layer's constructor draws its weights with."""
    return frozenset(f for name, f in vars(torch.nn.init).items() if inspect.isfunction(f)
                     and not name.startswith("_") and "generator" in inspect.signature(f).parameters)


INITIALIZERS = _initializers()
# What weights_drawn() draws on the device: nn.init's functions, and the two in-place draws they end in, which
# a constructor may call itself.
_WEIGHT_DRAWS = INITIALIZERS | {torch.Tensor.uniform_, torch.Tensor.normal_}


def weights_drawn(device: torch.device | None, seed: int) -> contextlib.AbstractContextManager[object]:
    """Where `device` is one, a context within which a constructor's large weights are drawn on it (_WeightDraws);
    else one that changes nothing."""
    return _WeightDraws(device, seed) if device is not None else contextlib.nullcontext()


class _WeightDraws(TorchFunctionMode):
    """Within it, a call of nn.init's, or a tensor's own uniform_ or normal_, that names no generator (it would take
    torch's global one) and draws a contiguous CPU tensor of at least DEVICE_DRAW_MIN elements, is made on a
    device tensor of the same shape with a generator seeded with `seed`; the values are copied into the CPU
    tensor. A factory (rand, randn, randint) of a CPU tensor that large is drawn the same way into a new one.
    Everything else runs as it would.

    The call is made whole on the device (a tensor that size is about to be on the device anyway): nn.init's
    functions read the tensor's shape, `w.uniform_(-b, b)` gives what nn.init.uniform_(w, -b, b) gives, and
    `torch.randn(shape)` what `torch.empty(shape).normal_()` gives, as on the CPU.
    A torch dispatch mode would catch the in-place draw below any call, but the first use of one in a process
    imports torch's compiler stack: 4 s on an H200 host, in every run child."""

    def __init__(self, device: torch.device, seed: int) -> None:
        super().__init__()
        self.device = device
        self.generator = torch.Generator(device=device).manual_seed(seed)

    def __torch_function__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        kwargs = kwargs or {}
        if kwargs.get("generator") is None:
            made = self._factory_drawn(func, args, kwargs)
            if made is None:
                made = self._in_place_drawn(func, args, kwargs)
            if made is not None:
                return made
        return func(*args, **kwargs)

    def _factory_drawn(self, func: Any, args: Any, kwargs: dict[str, Any]) -> torch.Tensor | None:
        factory = _factory(func, args, kwargs)
        if factory is None or draws_on(args, kwargs).type != "cpu":
            return None
        out = factory.empty()
        _copy_into(out, factory.draw(factory.shape, self.device, self.generator))
        return out.requires_grad_(factory.requires_grad)

    def _in_place_drawn(self, func: Any, args: Any, kwargs: dict[str, Any]) -> torch.Tensor | None:
        if func not in _WEIGHT_DRAWS:
            return None
        named = {k: v for k, v in kwargs.items() if k not in ("tensor", "generator")}
        tensor, rest = (args[0], args[1:]) if args else (kwargs.get("tensor"), ())
        if not _large_on_cpu(tensor):
            return None
        on_device = torch.empty(tensor.shape, dtype=tensor.dtype, device=self.device)
        func(on_device, *rest, **named, generator=self.generator)
        _copy_into(tensor, on_device)
        return tensor


def _large_on_cpu(tensor: object) -> TypeGuard[torch.Tensor]:
    return isinstance(tensor, torch.Tensor) and tensor.device.type == "cpu" and tensor.is_contiguous() \
        and tensor.numel() >= DEVICE_DRAW_MIN


def _copy_into(target: torch.Tensor, source: torch.Tensor) -> None:
    """A device tensor's values into a contiguous CPU tensor of its shape. From a GPU, a piece at a time through
    the pinned buffers tensor files use (wire/staging.py): the target is pageable memory touched for the first
    time, and a direct copy there took 2.9 s for 4 GiB on an H200 (the draw itself, 3 ms)."""
    target = target.detach()  # a parameter: nn.init fills it under no_grad, so does this
    if source.device.type != "cuda":
        target.copy_(source)
        return
    back_with_huge_pages(target)
    landed = target.view(-1).view(torch.uint8)
    offset = 0
    for piece in staging.device_chunks(source):
        landed[offset:offset + len(piece)].copy_(torch.frombuffer(piece, dtype=torch.uint8))
        offset += len(piece)


def back_with_huge_pages(tensor: torch.Tensor) -> None:
    """Asks the kernel to back a fresh host tensor's memory with transparent huge pages, before anything touches
    it. Each 4 KiB page otherwise faults on first touch: on an H200 host, with one torch thread as in a run child,
    `nn.Linear(32768, 32768)` drawn on the GPU took 2.0-2.9 s to construct, most of it the copy of its 4 GiB into
    the new parameter, and 1.1-1.3 s with the advice. It is only taken where the kernel leaves huge pages to
    `madvise` (the common default) or uses them always; refused or unknown, it changes nothing but the speed."""
    advice = getattr(mmap, "MADV_HUGEPAGE", None)
    size = tensor.numel() * tensor.element_size()
    start = -(-tensor.data_ptr() // mmap.PAGESIZE) * mmap.PAGESIZE  # the whole pages within the tensor only
    end = (tensor.data_ptr() + size) // mmap.PAGESIZE * mmap.PAGESIZE
    if advice is not None and tensor.device.type == "cpu" and end > start:
        libc().madvise(ctypes.c_void_p(start), ctypes.c_size_t(end - start), advice)

