"""Global numeric-precision switches: set to strict fp32 for grading, snapshotted to detect changes
(docs/threats.md 14)."""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import torch

from kernelgrade.evaluator.request import TimingFlags
from kernelgrade.evaluator.shared_lock import SharedLock


def set_strict() -> None:
    """True fp32 everywhere: no TF32 in matmul or cuDNN, no reduced-precision reductions."""
    _switch(cudnn_tf32=False, reduced_reductions=False)


# Attributes of torch.backends that change how torch rounds fp32 work. Some exist only in newer torch
# releases (the fp32_precision API, fp16 accumulation); one that is missing is left out of the snapshot.
BACKEND_FLAGS = (
    "cuda.matmul.allow_tf32", "cudnn.allow_tf32", "cuda.matmul.allow_fp16_reduced_precision_reduction",
    "cuda.matmul.allow_bf16_reduced_precision_reduction", "cuda.matmul.allow_fp16_accumulation",
    "fp32_precision", "cuda.matmul.fp32_precision", "cudnn.fp32_precision", "cudnn.conv.fp32_precision",
    "cudnn.rnn.fp32_precision", "mkldnn.fp32_precision", "mkldnn.matmul.fp32_precision",
    "mkldnn.conv.fp32_precision",
)


def _readers() -> dict[str, Callable[[], object]]:
    readers: dict[str, Callable[[], object]] = {
        "float32_matmul_precision": torch.get_float32_matmul_precision,
        "default_dtype": torch.get_default_dtype,
        # By device type: is_autocast_cpu_enabled() is deprecated, and the bare call means CUDA.
        "autocast_cpu": functools.partial(torch.is_autocast_enabled, "cpu"),
        "autocast_cuda": functools.partial(torch.is_autocast_enabled, "cuda"),
    }
    for dotted in BACKEND_FLAGS:
        readers[dotted] = functools.partial(_backend_flag, dotted)
    return readers


def _backend_flag(dotted: str) -> object:
    value: object = torch.backends
    for part in dotted.split("."):
        value = getattr(value, part)
    return value


def snapshot() -> dict[str, str]:
    values = {}
    for name, read in _readers().items():
        try:
            values[name] = str(read())
        except (AttributeError, RuntimeError, TypeError):
            continue
    return values


def set_pytorch_defaults() -> None:
    """PyTorch's own defaults: cuDNN may use TF32, matmul stays fp32, reduced-precision reductions allowed."""
    _switch(cudnn_tf32=True, reduced_reductions=True)


def _switch(cudnn_tf32: bool, reduced_reductions: bool) -> None:
    torch.set_float32_matmul_precision("highest")
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = cudnn_tf32
    torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction = reduced_reductions
    torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction = reduced_reductions


def apply(flags: TimingFlags) -> None:
    if flags is TimingFlags.PYTORCH_DEFAULT:
        set_pytorch_defaults()
    else:
        set_strict()


# The switches are global to the process, and the judges of a multi-GPU host are threads of one process: work
# that needs strict switches (reference outputs, strict timing) shares the lock, work under PyTorch's defaults
# holds it alone.
_lock = SharedLock()


@contextmanager
def held(flags: TimingFlags = TimingFlags.STRICT) -> Iterator[None]:
    """Run the block under `flags`, safe against other judge threads; strict again afterwards. Not reentrant:
    a block inside another would wait for itself once an exclusive holder queues. Strict blocks set the
    switches themselves: PyTorch's defaults run cuDNN convolutions in TF32, and a caller that never set them
    (a test, a benchmark) would otherwise get a TF32 reference."""
    if flags is TimingFlags.STRICT:
        with _lock.shared():
            set_strict()
            yield
        return
    with _lock.exclusive():
        set_pytorch_defaults()
        try:
            yield
        finally:
            set_strict()
