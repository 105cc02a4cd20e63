# The most common model-written kernel: one thread per output, summing its 8192 products in order in fp32.
# Its rounding differs from cuBLAS's on outputs near zero; honest fp32 arithmetic: must be `correct`.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_source = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>

__global__ void naive_matmul_kernel(const float* a, const float* b, float* c, int m, int k, int n) {
    const int row = blockIdx.y * blockDim.y + threadIdx.y;
    const int col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= m || col >= n) return;
    float acc = 0.0f;
    for (int p = 0; p < k; ++p) acc += a[row * k + p] * b[p * n + col];
    c[row * n + col] = acc;
}

torch::Tensor naive_matmul(torch::Tensor a, torch::Tensor b) {
    TORCH_CHECK(a.is_cuda() && b.is_cuda() && a.is_contiguous() && b.is_contiguous(), "contiguous CUDA inputs");
    const int m = a.size(0), k = a.size(1), n = b.size(1);
    auto c = torch::empty({m, n}, a.options());
    const dim3 block(16, 16);
    const dim3 grid((n + 15) / 16, (m + 15) / 16);
    naive_matmul_kernel<<<grid, block, 0, at::cuda::getCurrentCUDAStream()>>>(
        a.data_ptr<float>(), b.data_ptr<float>(), c.data_ptr<float>(), m, k, n);
    return c;
}
"""
ext = load_inline(name="kg_case_cuda_naive_matmul", cpp_sources="torch::Tensor naive_matmul(torch::Tensor a, torch::Tensor b);",
                  cuda_sources=cuda_source, functions=["naive_matmul"], verbose=False)


class ModelNew(nn.Module):
    def forward(self, A, B):
        return ext.naive_matmul(A.contiguous(), B.contiguous())
