"""2D convolution with bias, 16 -> 32 channels, 3 x 3, padding 1, on 4 images of 64 x 64: a small CPU
problem."""
import torch
import torch.nn as nn

BATCH = 4
IN_CHANNELS = 16
OUT_CHANNELS = 32
HEIGHT = 64
WIDTH = 64
KERNEL = 3
PADDING = 1

KERNELGRADE = {
    "device": "cpu",
    "precision": "fp32",
    "suite": "cpu",
    "level": 1,
    "tags": ["convolution", "conv2d"],
    # the convolution and one bias add per output
    "flops": 2 * BATCH * OUT_CHANNELS * HEIGHT * WIDTH * IN_CHANNELS * KERNEL * KERNEL
             + BATCH * OUT_CHANNELS * HEIGHT * WIDTH,
    "bytes": (BATCH * IN_CHANNELS * HEIGHT * WIDTH + OUT_CHANNELS * IN_CHANNELS * KERNEL * KERNEL + OUT_CHANNELS
              + BATCH * OUT_CHANNELS * HEIGHT * WIDTH) * 4,
}


class Model(nn.Module):
    def __init__(self, in_channels: int, out_channels: int, kernel_size: int, padding: int):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, padding=padding)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv(x)


def get_inputs():
    x = torch.randn(BATCH, IN_CHANNELS, HEIGHT, WIDTH)
    return [x]


def get_init_inputs():
    return [IN_CHANNELS, OUT_CHANNELS, KERNEL, PADDING]
