# One loop per row adding its 16384 values in order, in fp32. Its rounding error is about 20x PyTorch's own
# (blocked) sum's, far below anything lower-precision arithmetic gives. Honest fp32: must be `correct`.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

source = """
#include <torch/extension.h>
torch::Tensor row_sum(torch::Tensor x) {
    TORCH_CHECK(x.is_contiguous(), "contiguous input expected");
    const int64_t rows = x.size(0), cols = x.size(1);
    auto out = torch::empty({rows}, x.options());
    const float* px = x.data_ptr<float>();
    float* po = out.data_ptr<float>();
    for (int64_t r = 0; r < rows; ++r) {
        float acc = 0.0f;
        for (int64_t c = 0; c < cols; ++c) acc += px[r * cols + c];
        po[r] = acc;
    }
    return out;
}
"""
ext = load_inline(name="kg_case_sequential_sum", cpp_sources=source, functions=["row_sum"], verbose=False)


class ModelNew(nn.Module):
    def forward(self, x):
        return ext.row_sum(x.contiguous())
