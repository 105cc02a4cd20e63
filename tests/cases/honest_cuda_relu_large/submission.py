# Honest ReLU on the built-in `relu` problem, whose 1.5 GiB output is the largest of the suite: the judge
# keeps four or five timed outputs (6-7.5 GiB) for its re-check, more than a child may write to one file,
# so this case guards the harness writing each timed output to a file of its own. Must be `correct`.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_source = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <algorithm>
#include <cstdint>

__global__ void relu_vec4(const float4* __restrict__ x, float4* __restrict__ out, int64_t n4) {
    const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
    for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n4; i += stride) {
        const float4 v = x[i];
        out[i] = make_float4(fmaxf(v.x, 0.0f), fmaxf(v.y, 0.0f), fmaxf(v.z, 0.0f), fmaxf(v.w, 0.0f));
    }
}

__global__ void relu_tail(const float* __restrict__ x, float* __restrict__ out, int64_t start, int64_t n) {
    const int64_t i = start + static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i < n) out[i] = fmaxf(x[i], 0.0f);
}

torch::Tensor relu(torch::Tensor x) {
    TORCH_CHECK(x.is_cuda() && x.is_contiguous() && x.scalar_type() == torch::kFloat, "contiguous float32 CUDA input");
    auto out = torch::empty_like(x);
    const int64_t n = x.numel();
    const int64_t n4 = n / 4;
    cudaStream_t stream = at::cuda::getCurrentCUDAStream();
    int sms = 0;
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, x.get_device());
    const int threads = 256;
    const int64_t wanted = (n4 + threads - 1) / threads;
    const int blocks = static_cast<int>(std::max<int64_t>(1, std::min<int64_t>(wanted, static_cast<int64_t>(sms) * 8)));
    if (n4 > 0) {
        relu_vec4<<<blocks, threads, 0, stream>>>(reinterpret_cast<const float4*>(x.data_ptr<float>()),
                                                  reinterpret_cast<float4*>(out.data_ptr<float>()), n4);
    }
    if (n > n4 * 4) {
        relu_tail<<<1, 4, 0, stream>>>(x.data_ptr<float>(), out.data_ptr<float>(), n4 * 4, n);
    }
    return out;
}
"""

cpp_source = "torch::Tensor relu(torch::Tensor x);"

relu_ext = load_inline(name="kg_case_relu_large", cpp_sources=cpp_source, cuda_sources=cuda_source,
                       functions=["relu"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return relu_ext.relu(x.contiguous())
