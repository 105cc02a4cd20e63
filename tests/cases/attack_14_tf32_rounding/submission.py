# docs/threats.md 14: computes the fp32 matmul on TF32-rounded inputs (10-bit mantissas, round to nearest), as a
# tensor-core kernel would, without touching any global flag. Every element passes allclose(atol=rtol=1e-4),
# which is how TF32 kernels pass KernelBench-style checks; against the float64 oracle the error is about 100
# times PyTorch's own fp32 error, which the fp32 policy refuses.
import torch
import torch.nn as nn


def tf32(x):
    bits = x.contiguous().view(torch.int32)
    return ((bits + 0x1000) & ~0x1FFF).view(torch.float32)


class ModelNew(nn.Module):
    def forward(self, a, b):
        return torch.matmul(tf32(a), tf32(b))
