import torch
import torch.nn as nn


class Model(nn.Module):
    """Copied the reference and forgot to rename it."""

    def forward(self, a, b):
        return torch.relu(a + b)
