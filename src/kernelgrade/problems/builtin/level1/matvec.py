"""Matrix-vector product y = A @ x with A of shape (24576, 32768) and x of shape (32768, 1): one read of a
3 GiB matrix, so it is bound by memory bandwidth."""
import torch
import torch.nn as nn

M = 24576
K = 32768

KERNELGRADE = {
    "device": "cuda",
    "precision": "fp32",
    "suite": "level1",
    "level": 1,
    "tags": ["matmul", "matvec", "memory-bound"],
    "flops": 2 * M * K,
    "bytes": (M * K + K + M) * 4,
}


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        return torch.matmul(A, x)


def get_inputs():
    A = torch.rand(M, K)
    x = torch.rand(K, 1)
    return [A, x]


def get_init_inputs():
    return []
