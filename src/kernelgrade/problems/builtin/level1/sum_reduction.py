"""Sum over the middle dimension of a (384, 4096, 512) tensor (3 GiB), keeping the dimension: a strided
reduction whose output is (384, 1, 512)."""
import torch
import torch.nn as nn

BATCH = 384
DIM1 = 4096
DIM2 = 512

KERNELGRADE = {
    "device": "cuda",
    "precision": "fp32",
    "suite": "level1",
    "level": 1,
    "tags": ["reduction", "memory-bound"],
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
