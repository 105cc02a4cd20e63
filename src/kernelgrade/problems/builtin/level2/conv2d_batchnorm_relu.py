"""Convolution, batch normalisation (training mode) and ReLU, the ResNet block's first half: 64 -> 128
channels, 3 x 3, padding 1, no conv bias (the normalisation would cancel it), on 32 images of 128 x 128."""
import torch
import torch.nn as nn

BATCH = 32
IN_CHANNELS = 64
OUT_CHANNELS = 128
HEIGHT = 128
WIDTH = 128
KERNEL = 3
PADDING = 1

KERNELGRADE = {
    "device": "cuda",
    "precision": "fp32",
    "suite": "level2",
    "level": 2,
    "tags": ["convolution", "batchnorm", "fused", "activation"],
    # the convolution, then per output: 7 for batch norm and one relu
    "flops": 2 * BATCH * OUT_CHANNELS * HEIGHT * WIDTH * IN_CHANNELS * KERNEL * KERNEL
             + 8 * BATCH * OUT_CHANNELS * HEIGHT * WIDTH,
    "bytes": (BATCH * IN_CHANNELS * HEIGHT * WIDTH + OUT_CHANNELS * IN_CHANNELS * KERNEL * KERNEL
              + 2 * OUT_CHANNELS + BATCH * OUT_CHANNELS * HEIGHT * WIDTH) * 4,
}


class Model(nn.Module):
    def __init__(self, in_channels: int, out_channels: int, kernel_size: int, padding: int):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, padding=padding, bias=False)
        self.norm = nn.BatchNorm2d(out_channels)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.norm(self.conv(x)))


def get_inputs():
    x = torch.randn(BATCH, IN_CHANNELS, HEIGHT, WIDTH)
    return [x]


def get_init_inputs():
    return [IN_CHANNELS, OUT_CHANNELS, KERNEL, PADDING]
