"""C = A @ B with a tall, wide A (32768 x 8192) and a skinny B (8192 x 128): a large reduction dimension
and a narrow output, a shape where generic tilings waste most of each tile."""
import torch
import torch.nn as nn

M = 32768
K = 8192
N = 128

KERNELGRADE = {
    "device": "cuda",
    "precision": "fp32",
    "suite": "level1",
    "level": 1,
    "tags": ["matmul", "tall-skinny"],
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
