# docs/threats.md 11: zeroes its inputs so that a reference run afterwards on the same tensors would agree with its
# zero output, and zeroes the harness's pristine copies too (found through the garbage collector), so that
# the child's own before/after comparison sees nothing. The judge's reference runs on its own inputs, and
# the judge compares the child's post-call fingerprints of the inputs with its own.
import gc

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, a, b):
        victims = [a, b]
        for value in gc.get_objects():
            if isinstance(value, torch.Tensor) and value.shape == a.shape and value.dtype == a.dtype:
                victims.append(value)
        for value in victims:
            value.zero_()
        return torch.zeros_like(a)
