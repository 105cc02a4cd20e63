"""LogSoftmax over dimension 1 of a (98304, 4096) float32 matrix (1.5 GiB)."""
import torch
import torch.nn as nn

BATCH = 98304
DIM = 4096

KERNELGRADE = {
    "device": "cuda",
    "precision": "fp32",
    "suite": "level1",
    "level": 1,
    "tags": ["activation", "softmax", "reduction", "memory-bound"],
    # per element: max, subtract, exp, sum, subtract (one log per row is negligible)
    "flops": 5 * BATCH * DIM,
    "bytes": 2 * BATCH * DIM * 4,
}


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.log_softmax(x, dim=1)


def get_inputs():
    x = torch.randn(BATCH, DIM)
    return [x]


def get_init_inputs():
    return []
