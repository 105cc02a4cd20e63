import time

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    """Computes exactly what the reference does, but takes 1 ms on one call and 30 ms on the next: a kernel
    whose time no median can pin down (a host busy with other work does the same to an honest one)."""

    def __init__(self):
        super().__init__()
        self.calls = 0

    def forward(self, a, b):
        self.calls += 1
        time.sleep(0.001 if self.calls % 2 else 0.030)
        return torch.relu(a + b)
