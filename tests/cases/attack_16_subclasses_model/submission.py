# docs/threats.md 16: ModelNew is the reference itself, reached by subclassing a copy of Model. Under the default
# policy ("report"), calling the reference's torch operations is allowed and reported: the grader says
# `correct` with review findings naming what it saw, so a person knows the speedup is PyTorch's own. (A
# problem whose policy forbids torch operations flags it; see tests/evaluator/test_static_scan.py.)
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, a, b):
        return torch.relu(a + b)


class ModelNew(Model):
    pass
