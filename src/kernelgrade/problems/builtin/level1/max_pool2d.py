"""2D max pooling, 3 x 3 window, stride 2, padding 1, on a (40, 64, 512, 512) tensor (2.5 GiB;
output 256 x 256)."""
import torch
import torch.nn as nn

BATCH = 40
CHANNELS = 64
HEIGHT = 512
WIDTH = 512
KERNEL = 3
STRIDE = 2
PADDING = 1
OUT_HEIGHT = (HEIGHT + 2 * PADDING - KERNEL) // STRIDE + 1
OUT_WIDTH = (WIDTH + 2 * PADDING - KERNEL) // STRIDE + 1

KERNELGRADE = {
    "device": "cuda",
    "precision": "fp32",
    "suite": "level1",
    "level": 1,
    "tags": ["pooling", "max-pool", "memory-bound"],
    "flops": BATCH * CHANNELS * OUT_HEIGHT * OUT_WIDTH * KERNEL * KERNEL,
    "bytes": (BATCH * CHANNELS * HEIGHT * WIDTH + BATCH * CHANNELS * OUT_HEIGHT * OUT_WIDTH) * 4,
}


class Model(nn.Module):
    def __init__(self, kernel_size: int, stride: int, padding: int):
        super().__init__()
        self.pool = nn.MaxPool2d(kernel_size, stride=stride, padding=padding)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.pool(x)


def get_inputs():
    x = torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH)
    return [x]


def get_init_inputs():
    return [KERNEL, STRIDE, PADDING]
