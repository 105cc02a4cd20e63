"""Layer normalisation over the last dimension (8192 features, with learned scale and shift) of a
(49152, 8192) float32 matrix (1.5 GiB)."""
import torch
import torch.nn as nn

BATCH = 49152
FEATURES = 8192

KERNELGRADE = {
    "device": "cuda",
    "precision": "fp32",
    "suite": "level1",
    "level": 1,
    "tags": ["normalization", "layernorm", "memory-bound"],
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
