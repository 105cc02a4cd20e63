"""Sum over the middle dimension of a (32, 1024, 256) tensor, keeping the dimension: a small CPU problem."""
import torch
import torch.nn as nn

BATCH = 32
DIM1 = 1024
DIM2 = 256

KERNELGRADE = {
    "device": "cpu",
    "precision": "fp32",
    "suite": "cpu",
    "level": 1,
    "tags": ["reduction"],
    "flops": BATCH * DIM1 * DIM2,
    "bytes": (BATCH * DIM1 * DIM2 + BATCH * DIM2) * 4,
}


class Model(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.sum(x, dim=self.dim, keepdim=True)


def get_inputs():
    x = torch.randn(BATCH, DIM1, DIM2)
    return [x]


def get_init_inputs():
    return [1]
