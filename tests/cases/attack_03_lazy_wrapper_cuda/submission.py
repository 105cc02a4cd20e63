# docs/threats.md 3, on the GPU: forward() returns a wrapper tensor subclass with no memory of its own, whose
# operations compute relu(a + b) only when something touches them. The harness accepts only a plain
# torch.Tensor with real device memory behind it.
import torch
import torch.nn as nn
from torch.utils._pytree import tree_map


class LazySum(torch.Tensor):
    @staticmethod
    def __new__(cls, a, b):
        wrapper = torch.Tensor._make_wrapper_subclass(cls, a.shape, dtype=a.dtype, device=a.device)
        wrapper.parts = (a, b)
        return wrapper

    @classmethod
    def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
        def real(value):
            return torch.relu(value.parts[0] + value.parts[1]) if isinstance(value, LazySum) else value

        return func(*tree_map(real, args), **tree_map(real, kwargs or {}))


class ModelNew(nn.Module):
    def forward(self, a, b):
        return LazySum(a, b)
