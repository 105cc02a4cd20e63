"""2D batch normalisation in training mode (statistics over batch and space for each of 64 channels, with
learned scale and shift) of a (96, 64, 256, 256) tensor (1.5 GiB)."""
import torch
import torch.nn as nn

BATCH = 96
CHANNELS = 64
HEIGHT = 256
WIDTH = 256

KERNELGRADE = {
    "device": "cuda",
    "precision": "fp32",
    "suite": "level1",
    "level": 1,
    "tags": ["normalization", "batchnorm", "memory-bound"],
    # per element: mean, subtract, square, sum, scale by 1/std, weight, bias
    "flops": 7 * BATCH * CHANNELS * HEIGHT * WIDTH,
    "bytes": (2 * BATCH * CHANNELS * HEIGHT * WIDTH + 2 * CHANNELS) * 4,
}


class Model(nn.Module):
    def __init__(self, channels: int):
        super().__init__()
        self.norm = nn.BatchNorm2d(channels)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.norm(x)


def get_inputs():
    x = torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH)
    return [x]


def get_init_inputs():
    return [CHANNELS]
