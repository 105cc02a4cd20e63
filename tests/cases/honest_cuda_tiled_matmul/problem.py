"""C = A @ B with a long inner dimension (1024 x 8192 by 8192 x 1024) on randn inputs, on the GPU: outputs
near zero carry the rounding of 8192 products, so any summation order other than cuBLAS's rounds them
visibly differently (the same file in each case folder that uses it, so one content hash)."""
import torch
import torch.nn as nn

M = 1024
K = 8192
N = 1024

KERNELGRADE = {
    "device": "cuda",
    "precision": "fp32",
    "suite": "cases",
    "flops": 2 * M * K * N,
    "bytes": (M * K + K * N + M * N) * 4,
}


class Model(nn.Module):
    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return torch.matmul(A, B)


def get_inputs():
    return [torch.randn(M, K), torch.randn(K, N)]


def get_init_inputs():
    return []
