"""3D tensor times matrix: C[n] = A[n] @ B for A of shape (16, 2048, 2048) and one shared B of shape
(2048, 1024)."""
import torch
import torch.nn as nn

BATCH = 16
M = 2048
K = 2048
L = 1024

KERNELGRADE = {
    "device": "cuda",
    "precision": "fp32",
    "suite": "level1",
    "level": 1,
    "tags": ["matmul", "3d"],
    "flops": 2 * BATCH * M * K * L,
    "bytes": (BATCH * M * K + K * L + BATCH * M * L) * 4,
}


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return torch.matmul(A, B)


def get_inputs():
    A = torch.rand(BATCH, M, K)
    B = torch.rand(K, L)
    return [A, B]


def get_init_inputs():
    return []
