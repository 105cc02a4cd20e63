"""Layer normalisation over 1024 features (learned scale and shift) of a (4096, 1024) matrix: a small CPU
problem."""
import torch
import torch.nn as nn

BATCH = 4096
FEATURES = 1024

KERNELGRADE = {
    "device": "cpu",
    "precision": "fp32",
    "suite": "cpu",
    "level": 1,
    "tags": ["normalization", "layernorm"],
    # per element: mean, subtract, square, sum, scale by 1/std, weight, bias
    "flops": 7 * BATCH * FEATURES,
    "bytes": (2 * BATCH * FEATURES + 2 * FEATURES) * 4,
}


class Model(nn.Module):
    def __init__(self, features: int):
        super().__init__()
        self.norm = nn.LayerNorm(features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.norm(x)


def get_inputs():
    x = torch.randn(BATCH, FEATURES)
    return [x]


def get_init_inputs():
    return [FEATURES]
