import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

source = """
#include <torch/extension.h>
torch::Tensor run(torch::Tensor a, torch::Tensor b) {
    volatile float* nowhere = nullptr;
    nowhere[12345] = a.data_ptr<float>()[0];
    return torch::relu(a + b);
}
"""
ext = load_inline(name="kg_case_segfault", cpp_sources=source, functions=["run"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        return ext.run(a.contiguous(), b.contiguous())
