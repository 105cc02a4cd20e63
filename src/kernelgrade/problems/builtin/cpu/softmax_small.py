"""Softmax over the last dimension of a (2048, 1024) matrix: a small CPU problem."""
import torch
import torch.nn as nn

BATCH = 2048
DIM = 1024

KERNELGRADE = {
    "device": "cpu",
    "precision": "fp32",
    "suite": "cpu",
    "level": 1,
    "tags": ["softmax", "reduction"],
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
