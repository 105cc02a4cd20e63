"""C = A @ B with dimensions that are not multiples of any tile size: M = 8205, K = 2949, N = 5921."""
import torch
import torch.nn as nn

M = 8205
K = 2949
N = 5921

KERNELGRADE = {
    "device": "cuda",
    "precision": "fp32",
    "suite": "level1",
    "level": 1,
    "tags": ["matmul", "irregular"],
    "flops": 2 * M * N * K,
    "bytes": (M * K + K * N + M * N) * 4,
}


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return torch.matmul(A, B)


def get_inputs():
    A = torch.rand(M, K)
    B = torch.rand(K, N)
    return [A, B]


def get_init_inputs():
    return []
