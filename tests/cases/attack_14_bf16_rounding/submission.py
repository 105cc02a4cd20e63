# docs/threats.md 14: multiplies bf16-rounded copies of the inputs (8-bit mantissas), accumulating in fp32, as a
# bf16 tensor-core kernel would. Its error against float64 is thousands of times PyTorch's fp32 error, and
# the output is what the reference itself gives on bf16-rounded inputs: `incorrect`, named as bf16.
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, A, B):
        return torch.matmul(A.to(torch.bfloat16).float(), B.to(torch.bfloat16).float())
