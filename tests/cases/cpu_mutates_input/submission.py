import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

source = """
#include <torch/extension.h>
torch::Tensor run(torch::Tensor a, torch::Tensor b) {
    // Saves an allocation by writing the result into its first input.
    a.add_(b).relu_();
    return a;
}
"""
ext = load_inline(name="kg_case_mutates", cpp_sources=source, functions=["run"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        return ext.run(a.contiguous(), b.contiguous())
