"""2D average pooling, 3 x 3 window, stride 1, padding 1 (zeros counted in the average), on a
(24, 64, 512, 512) tensor (1.5 GiB in, 1.5 GiB out): a 3 x 3 box filter with same-size output."""
import torch
import torch.nn as nn

BATCH = 24
CHANNELS = 64
HEIGHT = 512
WIDTH = 512
KERNEL = 3
STRIDE = 1
PADDING = 1

KERNELGRADE = {
    "device": "cuda",
    "precision": "fp32",
    "suite": "level1",
    "level": 1,
    "tags": ["pooling", "avg-pool", "memory-bound"],
    # K*K - 1 adds and one divide per output
    "flops": BATCH * CHANNELS * HEIGHT * WIDTH * KERNEL * KERNEL,
    "bytes": 2 * BATCH * CHANNELS * HEIGHT * WIDTH * 4,
}


class Model(nn.Module):
    def __init__(self, kernel_size: int, stride: int, padding: int):
        super().__init__()
        self.pool = nn.AvgPool2d(kernel_size, stride=stride, padding=padding)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.pool(x)


def get_inputs():
    x = torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH)
    return [x]


def get_init_inputs():
    return [KERNEL, STRIDE, PADDING]
