"""Square matrix multiplication C = A @ B with N = 4096 (the seed submissions' 003 problem)."""
import torch
import torch.nn as nn

N = 4096

KERNELGRADE = {
    "device": "cuda",
    "precision": "fp32",
    "suite": "level1",
    "level": 1,
    "tags": ["matmul", "seed"],
    "flops": 2 * N**3,
    "bytes": 3 * N * N * 4,
}


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return torch.matmul(A, B)


def get_inputs():
    A = torch.rand(N, N)
    B = torch.rand(N, N)
    return [A, B]


def get_init_inputs():
    return []
