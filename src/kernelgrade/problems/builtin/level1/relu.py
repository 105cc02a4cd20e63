"""ReLU, max(x, 0), on a 16384 x 24576 float32 matrix (1.5 GiB in, 1.5 GiB out): bound by memory bandwidth."""
import torch
import torch.nn as nn

BATCH = 16384
DIM = 24576

KERNELGRADE = {
    "device": "cuda",
    "precision": "fp32",
    "suite": "level1",
    "level": 1,
    "tags": ["activation", "elementwise", "memory-bound"],
    # one comparison per element
    "flops": 1 * BATCH * DIM,
    "bytes": 2 * BATCH * DIM * 4,
}


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(x)


def get_inputs():
    x = torch.randn(BATCH, DIM)
    return [x]


def get_init_inputs():
    return []
