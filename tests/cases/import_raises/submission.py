import torch
import torch.nn as nn

raise RuntimeError("CUDA toolkit not found")


class ModelNew(nn.Module):
    def forward(self, a, b):
        return torch.relu(a + b)
