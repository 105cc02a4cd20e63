"""C = A @ B with a long inner dimension (64 x 4096 by 4096 x 512) on randn inputs: a small CPU problem where
the order a kernel sums its 4096 products in visibly changes the rounding of outputs near zero."""
import torch
import torch.nn as nn

M = 64
K = 4096
N = 512

KERNELGRADE = {
    "device": "cpu",
    "precision": "fp32",
    "suite": "cpu",
    "level": 1,
    "tags": ["matmul"],
    "flops": 2 * M * K * N,
    "bytes": (M * K + K * N + M * N) * 4,
}


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return torch.matmul(A, B)


def get_inputs():
    A = torch.randn(M, K)
    B = torch.randn(K, N)
    return [A, B]


def get_init_inputs():
    return []
