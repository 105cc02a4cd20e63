"""Maximum over the middle dimension of a (384, 4096, 512) tensor (3 GiB). Inputs are normal, not uniform: the
maximum of 4096 uniform samples is within tolerance of 1.0 on every seed, so a constant would pass."""
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
        return torch.max(x, dim=self.dim).values


def get_inputs():
    x = torch.randn(BATCH, DIM1, DIM2)
    return [x]


def get_init_inputs():
    return [1]
