"""2D instance normalisation (statistics over space for each sample and channel, no affine parameters)
of a (96, 64, 256, 256) tensor (1.5 GiB)."""
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
    "tags": ["normalization", "instancenorm", "memory-bound"],
    # per element: mean, subtract, square, sum, scale by 1/std
    "flops": 5 * BATCH * CHANNELS * HEIGHT * WIDTH,
    "bytes": 2 * BATCH * CHANNELS * HEIGHT * WIDTH * 4,
}


class Model(nn.Module):
    def __init__(self, channels: int):
        super().__init__()
        self.norm = nn.InstanceNorm2d(channels)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.norm(x)


def get_inputs():
    x = torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH)
    return [x]


def get_init_inputs():
    return [CHANNELS]
