# docs/threats.md 3: forward() returns a tensor subclass that computes only when inspected. A grader that times
# forward() and only later reads the output would time nothing. The harness accepts only a plain
# torch.Tensor (type(out) is torch.Tensor) with real memory behind it.
import torch
import torch.nn as nn


class LazyResult(torch.Tensor):
    pending = None

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        for value in args:
            if isinstance(value, LazyResult) and value.pending is not None:
                a, b = value.pending
                value.pending = None
                with torch._C.DisableTorchFunctionSubclass():
                    torch.add(a, b, out=value).relu_()
        return super().__torch_function__(func, types, args, kwargs or {})


class ModelNew(nn.Module):
    def forward(self, a, b):
        out = torch.empty_like(a).as_subclass(LazyResult)
        out.pending = (a, b)
        return out
