"""An elementwise product scaled to about 1e-7: every output is far below an absolute tolerance of 1e-4."""
import torch
import torch.nn as nn

N = 512

KERNELGRADE = {
    "device": "cpu",
    "precision": "fp32",
    "suite": "cases",
    "flops": 2 * N * N,
    "bytes": 3 * N * N * 4,
}


class Model(nn.Module):
    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return a * b * 1e-7


def get_inputs():
    return [torch.randn(N, N), torch.randn(N, N)]


def get_init_inputs():
    return []
