# docs/threats.md 16: wraps a kernel that does not work in try/except and falls back to PyTorch, so the output is
# right and the "kernel" looks like it passes. The harness records the extension's functions that raise
# during forward(); a call that raised and still returned an output ran a fallback.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

source = """
#include <torch/extension.h>
torch::Tensor add_relu(torch::Tensor a, torch::Tensor b) {
    TORCH_CHECK(a.numel() <= 4096, "add_relu: the tiled path handles at most 4096 elements");
    return torch::relu(a + b);
}
"""
ext = load_inline(name="kg_attack_fallback", cpp_sources=source, functions=["add_relu"], verbose=False)


class ModelNew(nn.Module):
    def forward(self, a, b):
        try:
            return ext.add_relu(a, b)
        except RuntimeError:
            return torch.relu(a + b)
