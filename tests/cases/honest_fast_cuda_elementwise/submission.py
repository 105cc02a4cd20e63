# Honest and faster than eager PyTorch: one fused, float4-vectorized pass (read a and b, write the output)
# on the caller's stream, where eager runs two kernels (a + b into a temporary, then relu) and moves two
# thirds more memory. Must be `correct` with no flag, above the roofline floor, and faster than the reference.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_source = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <cuda_runtime.h>
#include <algorithm>
#include <cstdint>

__global__ void add_relu_vec4(const float4* __restrict__ a, const float4* __restrict__ b, float4* __restrict__ out,
                              int64_t n4) {
    const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
    for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n4; i += stride) {
        const float4 x = a[i];
        const float4 y = b[i];
        float4 r;
        r.x = fmaxf(x.x + y.x, 0.0f);
        r.y = fmaxf(x.y + y.y, 0.0f);
        r.z = fmaxf(x.z + y.z, 0.0f);
        r.w = fmaxf(x.w + y.w, 0.0f);
        out[i] = r;
    }
}

__global__ void add_relu_tail(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ out,
                              int64_t start, int64_t n) {
    const int64_t i = start + static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i < n) out[i] = fmaxf(a[i] + b[i], 0.0f);
}

torch::Tensor add_relu(torch::Tensor a, torch::Tensor b) {
    TORCH_CHECK(a.is_cuda() && b.is_cuda() && a.is_contiguous() && b.is_contiguous(), "contiguous CUDA inputs");
    auto out = torch::empty_like(a);
    const int64_t n = a.numel();
    const int64_t n4 = n / 4;
    cudaStream_t stream = at::cuda::getCurrentCUDAStream();
    int sms = 0;
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, a.get_device());
    const int threads = 256;
    const int64_t wanted = (n4 + threads - 1) / threads;
    const int blocks = static_cast<int>(std::max<int64_t>(1, std::min<int64_t>(wanted, static_cast<int64_t>(sms) * 8)));
    if (n4 > 0) {
        add_relu_vec4<<<blocks, threads, 0, stream>>>(reinterpret_cast<const float4*>(a.data_ptr<float>()),
                                                       reinterpret_cast<const float4*>(b.data_ptr<float>()),
                                                       reinterpret_cast<float4*>(out.data_ptr<float>()), n4);
    }
    if (n > n4 * 4) {
        add_relu_tail<<<1, 4, 0, stream>>>(a.data_ptr<float>(), b.data_ptr<float>(), out.data_ptr<float>(), n4 * 4, n);
    }
    return out;
}
"""

cpp_source = "torch::Tensor add_relu(torch::Tensor a, torch::Tensor b);"

ext = load_inline(name="kg_honest_cuda_add_relu", cpp_sources=cpp_source, cuda_sources=cuda_source,
                  functions=["add_relu"], extra_cuda_cflags=["-O3"], verbose=False)


class ModelNew(nn.Module):
    def forward(self, a, b):
        return ext.add_relu(a.contiguous(), b.contiguous())
