# docs/threats.md 8: sets aside the largest persisting-L2 region the device allows and marks its first input as
# persisting through an access policy window on the current stream, so that input survives the harness's
# cache flush between timed calls. The harness resets the set-aside and the window before timing, demotes
# persisting lines before every rep, and flags a submission that configured persisting L2 at all.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_source = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <cuda_runtime.h>
#include <algorithm>
#include <cstdint>

__global__ void add_relu_kernel(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ out,
                                int64_t n) {
    const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i < n) {
        const float v = a[i] + b[i];
        out[i] = v > 0.0f ? v : 0.0f;
    }
}

torch::Tensor add_relu_persisting(torch::Tensor a, torch::Tensor b) {
    int device = 0;
    cudaGetDevice(&device);
    int max_persisting = 0;
    int max_window = 0;
    cudaDeviceGetAttribute(&max_persisting, cudaDevAttrMaxPersistingL2CacheSize, device);
    cudaDeviceGetAttribute(&max_window, cudaDevAttrMaxAccessPolicyWindowSize, device);
    cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, static_cast<size_t>(max_persisting));

    cudaStream_t stream = at::cuda::getCurrentCUDAStream();
    cudaStreamAttrValue attr = {};
    attr.accessPolicyWindow.base_ptr = a.data_ptr();
    attr.accessPolicyWindow.num_bytes = std::min(static_cast<size_t>(a.nbytes()), static_cast<size_t>(max_window));
    attr.accessPolicyWindow.hitRatio = 1.0f;
    attr.accessPolicyWindow.hitProp = cudaAccessPropertyPersisting;
    attr.accessPolicyWindow.missProp = cudaAccessPropertyStreaming;
    cudaStreamSetAttribute(stream, cudaStreamAttributeAccessPolicyWindow, &attr);

    auto out = torch::empty_like(a);
    const int64_t n = a.numel();
    const int threads = 256;
    const int blocks = static_cast<int>((n + threads - 1) / threads);
    add_relu_kernel<<<blocks, threads, 0, stream>>>(a.data_ptr<float>(), b.data_ptr<float>(), out.data_ptr<float>(), n);
    return out;
}
"""

cpp_source = "torch::Tensor add_relu_persisting(torch::Tensor a, torch::Tensor b);"

ext = load_inline(name="kg_attack_persisting_l2", cpp_sources=cpp_source, cuda_sources=cuda_source,
                  functions=["add_relu_persisting"], verbose=False)


class ModelNew(nn.Module):
    def forward(self, a, b):
        return ext.add_relu_persisting(a.contiguous(), b.contiguous())
