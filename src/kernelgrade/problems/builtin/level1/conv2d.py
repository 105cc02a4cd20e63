"""Standard 2D convolution: 64 -> 128 channels, 3 x 3 kernel, stride 1, padding 1, no bias, on a batch of
16 images of 256 x 256."""
import torch
import torch.nn as nn

BATCH = 16
IN_CHANNELS = 64
OUT_CHANNELS = 128
HEIGHT = 256
WIDTH = 256
KERNEL = 3
PADDING = 1
OUT_HEIGHT = HEIGHT + 2 * PADDING - KERNEL + 1
OUT_WIDTH = WIDTH + 2 * PADDING - KERNEL + 1

KERNELGRADE = {
    "device": "cuda",
    "precision": "fp32",
    "suite": "level1",
    "level": 1,
    "tags": ["convolution", "conv2d"],
    "flops": 2 * BATCH * OUT_CHANNELS * OUT_HEIGHT * OUT_WIDTH * IN_CHANNELS * KERNEL * KERNEL,
    "bytes": (BATCH * IN_CHANNELS * HEIGHT * WIDTH + OUT_CHANNELS * IN_CHANNELS * KERNEL * KERNEL
              + BATCH * OUT_CHANNELS * OUT_HEIGHT * OUT_WIDTH) * 4,
}


class Model(nn.Module):
    def __init__(self, in_channels: int, out_channels: int, kernel_size: int, padding: int):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, padding=padding, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv(x)


def get_inputs():
    x = torch.randn(BATCH, IN_CHANNELS, HEIGHT, WIDTH)
    return [x]


def get_init_inputs():
    return [IN_CHANNELS, OUT_CHANNELS, KERNEL, PADDING]
