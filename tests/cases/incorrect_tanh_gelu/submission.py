# The tanh approximation of GELU for a problem that asks for the exact (erf) GELU: a different function, off
# by up to about 5e-4, in honest fp32 arithmetic. `incorrect`, with a message that says which values differ
# (not that the kernel computes at lower precision).
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

source = """
#include <torch/extension.h>
#include <cmath>
torch::Tensor gelu_tanh(torch::Tensor x) {
    TORCH_CHECK(x.is_contiguous(), "contiguous input expected");
    auto out = torch::empty_like(x);
    const float* px = x.data_ptr<float>();
    float* po = out.data_ptr<float>();
    const float k = 0.7978845608028654f;  // sqrt(2 / pi)
    for (int64_t i = 0; i < x.numel(); ++i) {
        const float v = px[i];
        po[i] = 0.5f * v * (1.0f + std::tanh(k * (v + 0.044715f * v * v * v)));
    }
    return out;
}
"""
ext = load_inline(name="kg_case_gelu_tanh", cpp_sources=source, functions=["gelu_tanh"], verbose=False)


class ModelNew(nn.Module):
    def forward(self, x):
        return ext.gelu_tanh(x.contiguous())
