# One block per row; each thread Kahan-sums a strided slice of the row, then the block adds the partial sums
# in a tree. More accurate than PyTorch's own fp32 sum, in another order: must be `correct`.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_source = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>

constexpr int THREADS = 256;

__global__ void kahan_row_sum_kernel(const float* x, float* out, int cols) {
    __shared__ float partial[THREADS];
    const float* row = x + static_cast<long long>(blockIdx.x) * cols;
    float sum = 0.0f, carry = 0.0f;
    for (int c = threadIdx.x; c < cols; c += THREADS) {
        const float y = row[c] - carry;
        const float t = sum + y;
        carry = (t - sum) - y;
        sum = t;
    }
    partial[threadIdx.x] = sum;
    __syncthreads();
    for (int step = THREADS / 2; step > 0; step /= 2) {
        if (threadIdx.x < step) partial[threadIdx.x] += partial[threadIdx.x + step];
        __syncthreads();
    }
    if (threadIdx.x == 0) out[blockIdx.x] = partial[0];
}

torch::Tensor kahan_row_sum(torch::Tensor x) {
    TORCH_CHECK(x.is_cuda() && x.is_contiguous(), "a contiguous CUDA input");
    auto out = torch::empty({x.size(0)}, x.options());
    kahan_row_sum_kernel<<<x.size(0), THREADS, 0, at::cuda::getCurrentCUDAStream()>>>(
        x.data_ptr<float>(), out.data_ptr<float>(), x.size(1));
    return out;
}
"""
ext = load_inline(name="kg_case_cuda_kahan_sum", cpp_sources="torch::Tensor kahan_row_sum(torch::Tensor x);",
                  cuda_sources=cuda_source, functions=["kahan_row_sum"], verbose=False)


class ModelNew(nn.Module):
    def forward(self, x):
        return ext.kahan_row_sum(x.contiguous())
