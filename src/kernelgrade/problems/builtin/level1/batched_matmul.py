"""Batched matrix multiplication C[b] = A[b] @ B[b] for 128 pairs of (512 x 1024) @ (1024 x 1024) matrices."""
import torch
import torch.nn as nn

BATCH = 128
M = 512
K = 1024
N = 1024

KERNELGRADE = {
    "device": "cuda",
    "precision": "fp32",
    "suite": "level1",
    "level": 1,
    "tags": ["matmul", "batched"],
    "flops": 2 * BATCH * M * N * K,
    "bytes": BATCH * (M * K + K * N + M * N) * 4,
}


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return torch.bmm(A, B)


def get_inputs():
    A = torch.rand(BATCH, M, K)
    B = torch.rand(BATCH, K, N)
    return [A, B]


def get_init_inputs():
    return []
