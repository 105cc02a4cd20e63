# docs/threats.md 9: allocates its output and writes nothing, hoping the allocator hands back a block that still
# holds a right answer. The reference is never computed in this process, and the harness fills freed memory
# with 0xFF bytes (NaN) before each checked call.
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, a, b):
        return torch.empty_like(a)
