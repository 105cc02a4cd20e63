"""Global numeric-precision switches: set to strict fp32 for grading, snapshotted to detect changes
(THREATS.md 14)."""

from __future__ import annotations

import functools
from collections.abc import Callable

import torch


def set_strict() -> None:
    """True fp32 everywhere: no TF32 in matmul or cuDNN, no reduced-precision reductions."""
    torch.set_float32_matmul_precision("highest")
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction = False
    torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction = False


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
        "autocast_cpu": torch.is_autocast_cpu_enabled,
        "autocast_cuda": torch.is_autocast_enabled,
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
