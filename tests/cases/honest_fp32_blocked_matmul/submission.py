# A blocked kernel that sums in yet another order: partial sums over tiles of 256 products, the tiles added
# from the last to the first. Honest fp32 arithmetic in a different order: must be `correct`.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

source = """
#include <torch/extension.h>
#include <vector>
torch::Tensor blocked_matmul(torch::Tensor a, torch::Tensor b) {
    TORCH_CHECK(a.is_contiguous() && b.is_contiguous(), "contiguous inputs expected");
    const int64_t m = a.size(0), k = a.size(1), n = b.size(1), tile = 256;
    auto out = torch::zeros({m, n}, a.options());
    const float* pa = a.data_ptr<float>();
    const float* pb = b.data_ptr<float>();
    float* po = out.data_ptr<float>();
    std::vector<float> partial(n);
    for (int64_t i = 0; i < m; ++i)
        for (int64_t t = (k - 1) / tile; t >= 0; --t) {
            std::fill(partial.begin(), partial.end(), 0.0f);
            for (int64_t p = t * tile; p < std::min(k, (t + 1) * tile); ++p) {
                const float av = pa[i * k + p];
                for (int64_t j = 0; j < n; ++j) partial[j] += av * pb[p * n + j];
            }
            for (int64_t j = 0; j < n; ++j) po[i * n + j] += partial[j];
        }
    return out;
}
"""
ext = load_inline(name="kg_case_blocked_matmul", cpp_sources=source, functions=["blocked_matmul"], verbose=False)


class ModelNew(nn.Module):
    def forward(self, A, B):
        return ext.blocked_matmul(A.contiguous(), B.contiguous())
