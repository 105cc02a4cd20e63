"""Elementwise relu(a + b) on 1024 x 1024 float32 matrices: a small CPU problem."""
import torch
import torch.nn as nn

N = 1024

KERNELGRADE = {
    "device": "cpu",
    "precision": "fp32",
    "suite": "cpu",
    "level": 1,
    "tags": ["elementwise"],
    "flops": 2 * N * N,
    "bytes": 3 * N * N * 4,
}


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return torch.relu(a + b)


def get_inputs():
    return [torch.randn(N, N), torch.randn(N, N)]


def get_init_inputs():
    return []
