# docs/threats.md 12: returns zeros, which an absolute tolerance of 1e-4 accepts for outputs of size 1e-7. Under
# the fp32 policy the error is measured relative to the float64 oracle's norm, where zeros are 100 % wrong.
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, a, b):
        return torch.zeros_like(a)
