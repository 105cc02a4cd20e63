"""The SwiGLU feed-forward block of a transformer: down(silu(gate(x)) * up(x)) for 2048 tokens of width
2048 and a hidden width of 5632, three bias-free nn.Linear layers."""
import torch
import torch.nn as nn

TOKENS = 2048
DIM = 2048
HIDDEN = 5632

KERNELGRADE = {
    "device": "cuda",
    "precision": "fp32",
    "suite": "level2",
    "level": 2,
    "tags": ["matmul", "mlp", "fused", "activation"],
    # three matmuls, then per hidden value: 5 for silu (negate, exp, add, divide, multiply) and the product
    "flops": 3 * 2 * TOKENS * DIM * HIDDEN + 6 * TOKENS * HIDDEN,
    "bytes": (2 * TOKENS * DIM + 3 * DIM * HIDDEN) * 4,
}


class Model(nn.Module):
    def __init__(self, dim: int, hidden: int):
        super().__init__()
        self.gate = nn.Linear(dim, hidden, bias=False)
        self.up = nn.Linear(dim, hidden, bias=False)
        self.down = nn.Linear(hidden, dim, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down(torch.nn.functional.silu(self.gate(x)) * self.up(x))


def get_inputs():
    x = torch.randn(TOKENS, DIM)
    return [x]


def get_init_inputs():
    return [DIM, HIDDEN]
