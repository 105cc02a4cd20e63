# Compensated (Kahan) summation per row: more accurate than PyTorch's own fp32 sum. Must be `correct`.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

source = """
#include <torch/extension.h>
torch::Tensor kahan_row_sum(torch::Tensor x) {
    TORCH_CHECK(x.is_contiguous(), "contiguous input expected");
    const int64_t rows = x.size(0), cols = x.size(1);
    auto out = torch::empty({rows}, x.options());
    const float* px = x.data_ptr<float>();
    float* po = out.data_ptr<float>();
    for (int64_t r = 0; r < rows; ++r) {
        float sum = 0.0f, carry = 0.0f;
        for (int64_t c = 0; c < cols; ++c) {
            const float y = px[r * cols + c] - carry;
            const float t = sum + y;
            carry = (t - sum) - y;
            sum = t;
        }
        po[r] = sum;
    }
    return out;
}
"""
ext = load_inline(name="kg_case_kahan_sum", cpp_sources=source, functions=["kahan_row_sum"],
                  extra_cflags=["-O2", "-fno-fast-math"], verbose=False)


class ModelNew(nn.Module):
    def forward(self, x):
        return ext.kahan_row_sum(x.contiguous())
