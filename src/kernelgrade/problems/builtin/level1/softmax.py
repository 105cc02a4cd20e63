"""Softmax over the last dimension of a (98304, 4096) float32 matrix (1.5 GiB). Rows of 4096 keep the largest
probabilities well above the absolute tolerance; much wider rows would let an all-zero output pass."""
import torch
import torch.nn as nn

BATCH = 98304
DIM = 4096

KERNELGRADE = {
    "device": "cuda",
    "precision": "fp32",
    "suite": "level1",
    "level": 1,
    "tags": ["activation", "softmax", "reduction", "memory-bound"],
    # per element: max, subtract, exp, sum, divide
    "flops": 5 * BATCH * DIM,
    "bytes": 2 * BATCH * DIM * 4,
}


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.softmax(x, dim=-1)


def get_inputs():
    x = torch.randn(BATCH, DIM)
    return [x]


def get_init_inputs():
    return []
