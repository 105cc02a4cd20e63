# docs/threats.md 16: compiles a kernel to look like a kernel submission, then computes the answer with PyTorch
# and never calls it (getattr with a computed name hides that from a reader). The harness sees which
# extension functions ran: none did.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

source = """
#include <torch/extension.h>
torch::Tensor add_relu(torch::Tensor a, torch::Tensor b) {
    auto out = torch::empty_like(a);
    const float* pa = a.data_ptr<float>();
    const float* pb = b.data_ptr<float>();
    float* po = out.data_ptr<float>();
    for (int64_t i = 0; i < a.numel(); ++i) po[i] = pa[i] + pb[i] > 0.0f ? pa[i] + pb[i] : 0.0f;
    return out;
}
"""
ext = load_inline(name="kg_attack_unlaunched", cpp_sources=source, functions=["add_relu"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.kernel = getattr(ext, "add" + "_relu")

    def forward(self, a, b):
        return torch.relu(a + b)
