# docs/threats.md 9, on the device: computes the first call honestly, then returns torch::empty outputs without
# launching anything, hoping the caching allocator hands back a block that still holds an answer. The
# reference is never computed in this process, and the harness fills the allocator's free blocks with 0xFF
# bytes (NaN) before every checked call.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_source = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <cuda_runtime.h>
#include <cstdint>

__global__ void add_relu_kernel(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ out,
                                int64_t n) {
    const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i < n) {
        const float v = a[i] + b[i];
        out[i] = v > 0.0f ? v : 0.0f;
    }
}

static int64_t calls = 0;

torch::Tensor add_relu_stale(torch::Tensor a, torch::Tensor b) {
    auto out = torch::empty_like(a);
    if (calls++ > 0) {
        return out;  // nothing written: whatever the block held
    }
    const int64_t n = a.numel();
    const int threads = 256;
    const int blocks = static_cast<int>((n + threads - 1) / threads);
    cudaStream_t stream = at::cuda::getCurrentCUDAStream();
    add_relu_kernel<<<blocks, threads, 0, stream>>>(a.data_ptr<float>(), b.data_ptr<float>(), out.data_ptr<float>(), n);
    return out;
}
"""

cpp_source = "torch::Tensor add_relu_stale(torch::Tensor a, torch::Tensor b);"

ext = load_inline(name="kg_attack_stale_device", cpp_sources=cpp_source, cuda_sources=cuda_source,
                  functions=["add_relu_stale"], verbose=False)


class ModelNew(nn.Module):
    def forward(self, a, b):
        return ext.add_relu_stale(a.contiguous(), b.contiguous())
