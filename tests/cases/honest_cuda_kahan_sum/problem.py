"""Row sums of a 1024 x 65536 randn matrix on the GPU: a reduction long enough that the summation order
shows in the rounding."""
import torch
import torch.nn as nn

ROWS = 1024
COLS = 65536

KERNELGRADE = {
    "device": "cuda",
    "precision": "fp32",
    "suite": "cases",
    "flops": ROWS * COLS,
    "bytes": (ROWS * COLS + ROWS) * 4,
}


class Model(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.sum(x, dim=1)


def get_inputs():
    return [torch.randn(ROWS, COLS)]


def get_init_inputs():
    return []
