"""Row sums of a 256 x 16384 randn matrix: a small CPU problem where a plain sequential sum rounds about 20
times worse than PyTorch's blocked one, and still computes in honest fp32."""
import torch
import torch.nn as nn

ROWS = 256
COLS = 16384

KERNELGRADE = {
    "device": "cpu",
    "precision": "fp32",
    "suite": "cpu",
    "level": 1,
    "tags": ["reduction"],
    "flops": ROWS * COLS,
    "bytes": (ROWS * COLS + ROWS) * 4,
}


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.sum(x, dim=1)


def get_inputs():
    x = torch.randn(ROWS, COLS)
    return [x]


def get_init_inputs():
    return []
