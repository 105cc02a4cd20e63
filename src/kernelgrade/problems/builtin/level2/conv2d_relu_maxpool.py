"""Convolution with bias, ReLU and 2 x 2 max pooling: 64 -> 128 channels, 3 x 3, padding 1, on 32 images
of 128 x 128 (output 64 x 64)."""
import torch
import torch.nn as nn

BATCH = 32
IN_CHANNELS = 64
OUT_CHANNELS = 128
HEIGHT = 128
WIDTH = 128
KERNEL = 3
PADDING = 1
POOL = 2
OUT_HEIGHT = HEIGHT // POOL
OUT_WIDTH = WIDTH // POOL

KERNELGRADE = {
    "device": "cuda",
    "precision": "fp32",
    "suite": "level2",
    "level": 2,
    "tags": ["convolution", "pooling", "fused", "activation"],
    # the convolution, a bias add and a relu per conv output, POOL * POOL comparisons per pooled output
    "flops": 2 * BATCH * OUT_CHANNELS * HEIGHT * WIDTH * IN_CHANNELS * KERNEL * KERNEL
             + 2 * BATCH * OUT_CHANNELS * HEIGHT * WIDTH + BATCH * OUT_CHANNELS * HEIGHT * WIDTH,
    "bytes": (BATCH * IN_CHANNELS * HEIGHT * WIDTH + OUT_CHANNELS * IN_CHANNELS * KERNEL * KERNEL + OUT_CHANNELS
              + BATCH * OUT_CHANNELS * OUT_HEIGHT * OUT_WIDTH) * 4,
}


class Model(nn.Module):
    def __init__(self, in_channels: int, out_channels: int, kernel_size: int, padding: int, pool: int):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, padding=padding)
        self.pool = nn.MaxPool2d(pool)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.pool(torch.relu(self.conv(x)))


def get_inputs():
    x = torch.randn(BATCH, IN_CHANNELS, HEIGHT, WIDTH)
    return [x]


def get_init_inputs():
    return [IN_CHANNELS, OUT_CHANNELS, KERNEL, PADDING, POOL]
