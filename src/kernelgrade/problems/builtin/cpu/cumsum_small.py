"""Inclusive prefix sum along the rows of a (1024, 4096) matrix: a small CPU problem (a scan, which a
kernel cannot simply split across threads)."""
import torch
import torch.nn as nn

BATCH = 1024
DIM = 4096

KERNELGRADE = {
    "device": "cpu",
    "precision": "fp32",
    "suite": "cpu",
    "level": 1,
    "tags": ["scan"],
    "flops": BATCH * DIM,
    "bytes": 2 * BATCH * DIM * 4,
}


class Model(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.cumsum(x, dim=self.dim)


def get_inputs():
    x = torch.randn(BATCH, DIM)
    return [x]


def get_init_inputs():
    return [1]
