"""Lower-precision formats a kernel may silently compute in, emulated on fp32 tensors.

The judge runs the reference on inputs and weights rounded to these formats to learn two things about a
problem: how large an error the least lossy forbidden format (TF32) gives on it, which places the fp32
policy's limit, and whether a failing output is what one of them would give, which names the cause.
"""

from __future__ import annotations

from enum import StrEnum

import torch


class Rounding(StrEnum):
    TF32 = "tf32"
    BF16 = "bf16"
    FP16 = "fp16"

    @property
    def described(self) -> str:
        return _DESCRIBED[self]


_DESCRIBED = {
    Rounding.TF32: "TF32 (10-bit mantissas, as tensor cores in TF32 mode read fp32 operands)",
    Rounding.BF16: "bf16 (8-bit mantissas)",
    Rounding.FP16: "fp16 (10-bit mantissas, 5-bit exponents)",
}

# TF32 keeps 10 of fp32's 23 mantissa bits; the other 13 are rounded off.
_TF32_DROPPED_BITS = 13


def round_to(value: torch.Tensor, rounding: Rounding) -> torch.Tensor:
    """`value` (an fp32 tensor) rounded to `rounding`'s precision and returned as fp32; any other tensor as
    it is. TF32 rounds to nearest with ties away from zero, like the hardware's cvt.rna.tf32.f32; bf16 and
    fp16 round to nearest even, like torch's own conversions."""
    if value.dtype != torch.float32:
        return value
    if rounding is Rounding.BF16:
        return value.to(torch.bfloat16).to(torch.float32)
    if rounding is Rounding.FP16:
        return value.to(torch.float16).to(torch.float32)
    bits = value.contiguous().view(torch.int32)
    half = 1 << (_TF32_DROPPED_BITS - 1)
    mask = ~((1 << _TF32_DROPPED_BITS) - 1)
    rounded = torch.where(torch.isfinite(value), (bits + half) & mask, bits)
    return rounded.view(torch.float32).view(value.shape)
