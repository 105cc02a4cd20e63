import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

source = """
#include <torch/extension.h>
torch::Tensor run(torch::Tensor a, torch::Tensor b) {
    TORCH_CHECK(a.size(0) == 17, "this kernel only handles 17 rows, got ", a.size(0));
    return torch::relu(a + b);
}
"""
ext = load_inline(name="kg_case_raises", cpp_sources=source, functions=["run"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        return ext.run(a.contiguous(), b.contiguous())
