# The textbook kernel: every output sums its 4096 products in order, one at a time, in fp32. On randn inputs
# many outputs sit near zero, where this order rounds differently from MKL's blocked sum (6 of 32768 values
# fail allclose(atol=rtol=1e-4)); its relative error against float64 is about 4x PyTorch's own. Honest fp32
# arithmetic: must be `correct`.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

source = """
#include <torch/extension.h>
torch::Tensor naive_matmul(torch::Tensor a, torch::Tensor b) {
    TORCH_CHECK(a.is_contiguous() && b.is_contiguous(), "contiguous inputs expected");
    const int64_t m = a.size(0), k = a.size(1), n = b.size(1);
    auto out = torch::zeros({m, n}, a.options());
    const float* pa = a.data_ptr<float>();
    const float* pb = b.data_ptr<float>();
    float* po = out.data_ptr<float>();
    // i-k-j order: each output still accumulates its products for k = 0, 1, ... in turn.
    for (int64_t i = 0; i < m; ++i)
        for (int64_t p = 0; p < k; ++p) {
            const float av = pa[i * k + p];
            for (int64_t j = 0; j < n; ++j) po[i * n + j] += av * pb[p * n + j];
        }
    return out;
}
"""
ext = load_inline(name="kg_case_naive_matmul", cpp_sources=source, functions=["naive_matmul"], verbose=False)


class ModelNew(nn.Module):
    def forward(self, A, B):
        return ext.naive_matmul(A.contiguous(), B.contiguous())
