# docs/threats.md 17: monkeypatches torch so that the reference's operations (relu, tensor addition) crawl,
# hoping the reference is timed in this process after the submission is loaded. The reference is timed in
# the judge's own process, which the submission never touches; and rebinding torch.Tensor methods the
# harness relies on is flagged.
import time

import torch
import torch.nn as nn

_add = torch.Tensor.__add__
_relu = torch.relu


def slow_add(self, other):
    time.sleep(0.01)
    return _add(self, other)


def slow_relu(x, *args, **kwargs):
    time.sleep(0.01)
    return _relu(x, *args, **kwargs)


torch.Tensor.__add__ = slow_add
torch.relu = slow_relu


class ModelNew(nn.Module):
    def forward(self, a, b):
        out = torch.empty_like(a)
        torch.add(a, b, out=out)
        return out.clamp_min_(0.0)
