# docs/threats.md 7, on the device: a C++ static map keeps each output tensor (in GPU memory) keyed on the input's
# device pointer. The caching allocator hands the same blocks back call after call, so the key repeats while
# the values do not. New input values every trial and every timed rep, and a re-check of sampled timed
# outputs, make a stale answer wrong.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_source = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <cuda_runtime.h>
#include <cstdint>
#include <unordered_map>

__global__ void add_relu_kernel(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ out,
                                int64_t n) {
    const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i < n) {
        const float v = a[i] + b[i];
        out[i] = v > 0.0f ? v : 0.0f;
    }
}

static std::unordered_map<uintptr_t, torch::Tensor> cache;

torch::Tensor add_relu_cached(torch::Tensor a, torch::Tensor b) {
    const uintptr_t key = reinterpret_cast<uintptr_t>(a.data_ptr());
    auto hit = cache.find(key);
    if (hit != cache.end()) {
        return hit->second;
    }
    auto out = torch::empty_like(a);
    const int64_t n = a.numel();
    const int threads = 256;
    const int blocks = static_cast<int>((n + threads - 1) / threads);
    cudaStream_t stream = at::cuda::getCurrentCUDAStream();
    add_relu_kernel<<<blocks, threads, 0, stream>>>(a.data_ptr<float>(), b.data_ptr<float>(), out.data_ptr<float>(), n);
    cache.emplace(key, out);
    return out;
}
"""

cpp_source = "torch::Tensor add_relu_cached(torch::Tensor a, torch::Tensor b);"

ext = load_inline(name="kg_attack_device_cache", cpp_sources=cpp_source, cuda_sources=cuda_source,
                  functions=["add_relu_cached"], verbose=False)


class ModelNew(nn.Module):
    def forward(self, a, b):
        return ext.add_relu_cached(a.contiguous(), b.contiguous())
