# docs/threats.md 10: looks for the expected answer instead of computing it: every tensor the garbage collector
# knows, every tensor in the callers' frames, and every file it can see in its work directory and above.
# The expected outputs never exist in this process or on its filesystem; what it finds are inputs.
import gc
import os
import sys

import torch
import torch.nn as nn


def candidates(a, b):
    seen = {id(a), id(b)}
    frame = sys._getframe(1)
    while frame is not None:
        for value in list(frame.f_locals.values()):
            if isinstance(value, torch.Tensor) and id(value) not in seen:
                seen.add(id(value))
                yield value
        frame = frame.f_back
    for value in gc.get_objects():
        if isinstance(value, torch.Tensor) and id(value) not in seen:
            seen.add(id(value))
            yield value


def files():
    for root in (os.getcwd(), os.path.dirname(os.getcwd())):
        try:
            for name in os.listdir(root):
                yield os.path.join(root, name)
        except OSError:
            pass


class ModelNew(nn.Module):
    def forward(self, a, b):
        found = [f for f in files() if "output" in f or "expected" in f or "reference" in f]
        print("files that might hold answers:", found)
        for value in candidates(a, b):
            if value.shape == a.shape and value.dtype == a.dtype and not torch.equal(value, a):
                return value.clone()
        return torch.zeros_like(a)
