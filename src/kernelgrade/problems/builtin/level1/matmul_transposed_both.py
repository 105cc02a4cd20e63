"""C = A.T @ B.T with A of shape (K, M) and B of shape (N, K); M = 2048, K = 8192, N = 4096
(the seed submissions' 004 problem)."""
import torch
import torch.nn as nn

M = 2048
K = 8192
N = 4096

KERNELGRADE = {
    "device": "cuda",
    "precision": "fp32",
    "suite": "level1",
    "level": 1,
    "tags": ["matmul", "transpose", "seed"],
    "flops": 2 * M * N * K,
    "bytes": (M * K + K * N + M * N) * 4,
}


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return torch.matmul(A.T, B.T)


def get_inputs():
    A = torch.rand(K, M)
    B = torch.rand(N, K)
    return [A, B]


def get_init_inputs():
    return []
