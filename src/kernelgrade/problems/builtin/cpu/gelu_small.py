"""Exact (erf-based) GELU on a 2048 x 2048 matrix: a small CPU problem."""
import torch
import torch.nn as nn

BATCH = 2048
DIM = 2048

KERNELGRADE = {
    "device": "cpu",
    "precision": "fp32",
    "suite": "cpu",
    "level": 1,
    "tags": ["activation", "elementwise"],
    # 0.5 * x * (1 + erf(x / sqrt(2))): a scale, erf, an add and two multiplies
    "flops": 5 * BATCH * DIM,
    "bytes": 2 * BATCH * DIM * 4,
}


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.gelu(x)


def get_inputs():
    x = torch.randn(BATCH, DIM)
    return [x]


def get_init_inputs():
    return []
