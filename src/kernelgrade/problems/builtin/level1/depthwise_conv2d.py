"""Depthwise 2D convolution (one 3 x 3 filter per channel, groups = channels), padding 1, no bias, on a
(24, 64, 512, 512) tensor (1.5 GiB in, 1.5 GiB out): little arithmetic per byte, so bound by memory bandwidth."""
import torch
import torch.nn as nn

BATCH = 24
CHANNELS = 64
HEIGHT = 512
WIDTH = 512
KERNEL = 3
PADDING = 1

KERNELGRADE = {
    "device": "cuda",
    "precision": "fp32",
    "suite": "level1",
    "level": 1,
    "tags": ["convolution", "depthwise", "memory-bound"],
    "flops": 2 * BATCH * CHANNELS * HEIGHT * WIDTH * KERNEL * KERNEL,
    "bytes": (2 * BATCH * CHANNELS * HEIGHT * WIDTH + CHANNELS * KERNEL * KERNEL) * 4,
}


class Model(nn.Module):
    def __init__(self, channels: int, kernel_size: int, padding: int):
        super().__init__()
        self.conv = nn.Conv2d(channels, channels, kernel_size, padding=padding, groups=channels, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv(x)


def get_inputs():
    x = torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH)
    return [x]


def get_init_inputs():
    return [CHANNELS, KERNEL, PADDING]
