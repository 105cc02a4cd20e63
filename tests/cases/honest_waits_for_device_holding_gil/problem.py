"""relu(a + b) on 4096 x 4096 float32 matrices on the GPU: a small memory-bound problem that the GPU verdict
cases share (the same file in each case folder, so one content hash)."""
import torch
import torch.nn as nn

N = 4096

KERNELGRADE = {
    "device": "cuda",
    "precision": "fp32",
    "suite": "cases",
    "flops": 2 * N * N,
    "bytes": 3 * N * N * 4,
}


class Model(nn.Module):
    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return torch.relu(a + b)


def get_inputs():
    return [torch.randn(N, N), torch.randn(N, N)]


def get_init_inputs():
    return []
