"""A recurrent cell as KernelBench's level 3 writes them: forward() makes its own initial state (no dtype named)
and calls a layer through a function the model holds, as minGPT's block holds its MLP. The judge's float64
oracle must compute both in float64."""
import torch
import torch.nn as nn

KERNELGRADE = {
    "device": "cpu",
    "precision": "fp32",
    "suite": "cpu",
    "level": 3,
    "tags": ["recurrent"],
}


class Model(nn.Module):
    def __init__(self, features: int, hidden: int, steps: int):
        super().__init__()
        self.hidden, self.steps = hidden, steps
        self.inp = nn.Linear(features, hidden)
        self.mix = nn.Linear(hidden, hidden)
        mix = self.mix
        self.step = lambda x, h: torch.tanh(x + mix(h))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.zeros(x.shape[0], self.hidden, device=x.device)
        projected = self.inp(x)
        for _ in range(self.steps):
            h = self.step(projected, h)
        return h


def get_inputs():
    return [torch.randn(64, 32)]


def get_init_inputs():
    return [32, 48, 4]
