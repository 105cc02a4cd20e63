# Never finishes importing: the compile step, which imports the submission, must end at its limit and say so.
import torch
import torch.nn as nn

while True:
    pass


class ModelNew(nn.Module):
    def forward(self, a, b):
        return torch.relu(a + b)
