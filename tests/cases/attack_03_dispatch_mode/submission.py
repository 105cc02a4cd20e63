# docs/threats.md 3, without a subclass: forward() returns a plain, unwritten tensor, and a dispatch mode
# installed at import fills it in the first time any operation touches it (the harness's own checksum or
# copy included). The harness switches modes off for its own operations and flags any mode left installed.
import torch
import torch.nn as nn
from torch.utils._python_dispatch import TorchDispatchMode

pending = {}


class Materialize(TorchDispatchMode):
    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        for value in list(args) + list((kwargs or {}).values()):
            if isinstance(value, torch.Tensor) and id(value) in pending:
                a, b = pending.pop(id(value))
                torch.add(a, b, out=value).relu_()
        return func(*args, **(kwargs or {}))


Materialize().__enter__()


class ModelNew(nn.Module):
    def forward(self, a, b):
        out = torch.empty_like(a)
        pending[id(out)] = (a, b)
        return out
