# docs/threats.md 7: caches its result keyed on what the inputs look like (shape and dtype), as if every call got
# the same inputs. New input values every trial show the second answer is the first one again.
import torch
import torch.nn as nn

cache = {}


class ModelNew(nn.Module):
    def forward(self, a, b):
        key = (tuple(a.shape), a.dtype, tuple(b.shape))
        if key not in cache:
            cache[key] = torch.relu(a + b)
        return cache[key]
