# docs/threats.md 7, in C++: a static map keeps each result keyed on the number of elements, out of Python's
# sight. New input values every trial (and every timed rep) make a stale answer wrong.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

source = """
#include <torch/extension.h>
#include <unordered_map>

static std::unordered_map<int64_t, torch::Tensor> cache;

torch::Tensor add_relu(torch::Tensor a, torch::Tensor b) {
    auto hit = cache.find(a.numel());
    if (hit != cache.end()) return hit->second;
    auto out = torch::empty_like(a);
    const float* pa = a.data_ptr<float>();
    const float* pb = b.data_ptr<float>();
    float* po = out.data_ptr<float>();
    for (int64_t i = 0; i < a.numel(); ++i) {
        float v = pa[i] + pb[i];
        po[i] = v > 0.0f ? v : 0.0f;
    }
    cache.emplace(a.numel(), out);
    return out;
}
"""
ext = load_inline(name="kg_attack_cpp_static_cache", cpp_sources=source, functions=["add_relu"], verbose=False)


class ModelNew(nn.Module):
    def forward(self, a, b):
        return ext.add_relu(a.contiguous(), b.contiguous())
