"""relu(a + b) on 2048 x 4096 float32 matrices: a 32 MiB output, twice the file-size limit this case sets."""
import torch
import torch.nn as nn

ROWS, COLS = 2048, 4096

KERNELGRADE = {
    "device": "cpu",
    "precision": "fp32",
    "suite": "cpu",
    "level": 1,
    "tags": ["elementwise"],
    "flops": 16777216,
    "bytes": 100663296,
}


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return torch.relu(a + b)


def get_inputs():
    return [torch.randn(ROWS, COLS), torch.randn(ROWS, COLS)]


def get_init_inputs():
    return []
