"""GEMM, exact GELU and a constant scale: gelu(x @ W.T + b) * 0.5 for x of shape (4096, 4096) and a
4096 -> 4096 nn.Linear."""
import torch
import torch.nn as nn

BATCH = 4096
IN_FEATURES = 4096
OUT_FEATURES = 4096
SCALE = 0.5

KERNELGRADE = {
    "device": "cuda",
    "precision": "fp32",
    "suite": "level2",
    "level": 2,
    "tags": ["matmul", "fused", "activation"],
    # the matmul, then per output: bias add, 5 for the erf form of GELU, the scale
    "flops": 2 * BATCH * IN_FEATURES * OUT_FEATURES + 7 * BATCH * OUT_FEATURES,
    "bytes": (BATCH * IN_FEATURES + IN_FEATURES * OUT_FEATURES + OUT_FEATURES + BATCH * OUT_FEATURES) * 4,
}


class Model(nn.Module):
    def __init__(self, in_features: int, out_features: int, scale: float):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.scale = scale

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.gelu(self.linear(x)) * self.scale


def get_inputs():
    x = torch.randn(BATCH, IN_FEATURES)
    return [x]


def get_init_inputs():
    return [IN_FEATURES, OUT_FEATURES, SCALE]
