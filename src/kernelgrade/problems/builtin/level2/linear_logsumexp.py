"""A linear layer reduced by log-sum-exp over its outputs: logsumexp(x @ W.T + b, dim=1) for x of shape
(2048, 4096) and a 4096 -> 8192 nn.Linear; output (2048, 1)."""
import torch
import torch.nn as nn

BATCH = 2048
IN_FEATURES = 4096
OUT_FEATURES = 8192

KERNELGRADE = {
    "device": "cuda",
    "precision": "fp32",
    "suite": "level2",
    "level": 2,
    "tags": ["matmul", "reduction", "fused"],
    # the matmul, then per output: bias add, max, subtract, exp, sum
    "flops": 2 * BATCH * IN_FEATURES * OUT_FEATURES + 5 * BATCH * OUT_FEATURES,
    "bytes": (BATCH * IN_FEATURES + IN_FEATURES * OUT_FEATURES + OUT_FEATURES + BATCH) * 4,
}


class Model(nn.Module):
    def __init__(self, in_features: int, out_features: int):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.logsumexp(self.linear(x), dim=1, keepdim=True)


def get_inputs():
    x = torch.randn(BATCH, IN_FEATURES)
    return [x]


def get_init_inputs():
    return [IN_FEATURES, OUT_FEATURES]
