"""Transposed 2D convolution (upsampling by 2): 128 -> 64 channels, 3 x 3 kernel, stride 2, padding 1,
output padding 1, no bias, on a batch of 32 images of 128 x 128 (output 256 x 256)."""
import torch
import torch.nn as nn

BATCH = 32
IN_CHANNELS = 128
OUT_CHANNELS = 64
HEIGHT = 128
WIDTH = 128
KERNEL = 3
STRIDE = 2
PADDING = 1
OUTPUT_PADDING = 1
OUT_HEIGHT = (HEIGHT - 1) * STRIDE - 2 * PADDING + KERNEL + OUTPUT_PADDING
OUT_WIDTH = (WIDTH - 1) * STRIDE - 2 * PADDING + KERNEL + OUTPUT_PADDING

KERNELGRADE = {
    "device": "cuda",
    "precision": "fp32",
    "suite": "level1",
    "level": 1,
    "tags": ["convolution", "conv-transpose"],
    # every input pixel scatters a K x K x OUT_CHANNELS patch
    "flops": 2 * BATCH * IN_CHANNELS * HEIGHT * WIDTH * OUT_CHANNELS * KERNEL * KERNEL,
    "bytes": (BATCH * IN_CHANNELS * HEIGHT * WIDTH + IN_CHANNELS * OUT_CHANNELS * KERNEL * KERNEL
              + BATCH * OUT_CHANNELS * OUT_HEIGHT * OUT_WIDTH) * 4,
}


class Model(nn.Module):
    def __init__(self, in_channels: int, out_channels: int, kernel_size: int, stride: int, padding: int,
                 output_padding: int):
        super().__init__()
        self.conv = nn.ConvTranspose2d(in_channels, out_channels, kernel_size, stride=stride, padding=padding,
                                       output_padding=output_padding, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv(x)


def get_inputs():
    x = torch.randn(BATCH, IN_CHANNELS, HEIGHT, WIDTH)
    return [x]


def get_init_inputs():
    return [IN_CHANNELS, OUT_CHANNELS, KERNEL, STRIDE, PADDING, OUTPUT_PADDING]
