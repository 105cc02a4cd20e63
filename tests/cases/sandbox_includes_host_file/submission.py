# Includes a host file in its C++ source: the compiler's error quotes the file's first lines, so a build
# that could read the host's /etc/passwd would print its accounts into the result for the submitter to read.
# The sandbox's /etc holds none of the host's files, so the build fails without showing any.
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

source = """
#include <torch/extension.h>
#include "/etc/passwd"
torch::Tensor run(torch::Tensor a, torch::Tensor b) {
    return torch::relu(a + b);
}
"""
ext = load_inline(name="kg_case_includes_host_file", cpp_sources=source, functions=["run"], verbose=False)


class ModelNew(nn.Module):
    def forward(self, a, b):
        return ext.run(a.contiguous(), b.contiguous())
