"""Global numeric-precision switches: set to strict fp32 for grading, snapshotted to detect changes."""

from __future__ import annotations

import torch


def set_strict() -> None:
    """True fp32 everywhere: no TF32 in matmul or cuDNN, no reduced-precision reductions."""
    torch.set_float32_matmul_precision("highest")
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction = False
    torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction = False


def snapshot() -> dict[str, str]:
    return {
        "float32_matmul_precision": torch.get_float32_matmul_precision(),
        "cuda.matmul.allow_tf32": str(torch.backends.cuda.matmul.allow_tf32),
        "cudnn.allow_tf32": str(torch.backends.cudnn.allow_tf32),
        "cuda.matmul.allow_fp16_reduced_precision_reduction": str(
            torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction),
        "cuda.matmul.allow_bf16_reduced_precision_reduction": str(
            torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction),
    }
