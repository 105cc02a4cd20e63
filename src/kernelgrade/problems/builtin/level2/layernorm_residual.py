"""Residual add then layer normalisation (the post-norm transformer step): LayerNorm(x + residual) over
8192 features with learned scale and shift, for two (32768, 8192) inputs."""
import torch
import torch.nn as nn

BATCH = 32768
FEATURES = 8192

KERNELGRADE = {
    "device": "cuda",
    "precision": "fp32",
    "suite": "level2",
    "level": 2,
    "tags": ["normalization", "layernorm", "residual", "fused", "memory-bound"],
    # per element: the residual add, then 7 for layer norm
    "flops": 8 * BATCH * FEATURES,
    "bytes": (3 * BATCH * FEATURES + 2 * FEATURES) * 4,
}


class Model(nn.Module):
    def __init__(self, features: int):
        super().__init__()
        self.norm = nn.LayerNorm(features)

    def forward(self, x: torch.Tensor, residual: torch.Tensor) -> torch.Tensor:
        return self.norm(x + residual)


def get_inputs():
    x = torch.randn(BATCH, FEATURES)
    residual = torch.randn(BATCH, FEATURES)
    return [x, residual]


def get_init_inputs():
    return [FEATURES]
