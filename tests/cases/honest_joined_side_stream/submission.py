# Honest use of a stream of its own: the side stream waits for the caller's stream before reading the inputs,
# and the caller's stream waits for the side stream before forward() returns, so events on the caller's
# stream cover the kernel. Must be `correct` with no flag: using other streams is fine when they are joined.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_source = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime.h>
#include <cstdint>

__global__ void add_relu_kernel(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ out,
                                int64_t n) {
    const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
    for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
        out[i] = fmaxf(a[i] + b[i], 0.0f);
    }
}

torch::Tensor add_relu_joined(torch::Tensor a, torch::Tensor b) {
    auto out = torch::empty_like(a);
    const int64_t n = a.numel();
    c10::cuda::CUDAStream caller = c10::cuda::getCurrentCUDAStream();
    c10::cuda::CUDAStream side = c10::cuda::getStreamFromPool();

    cudaEvent_t inputs_ready;
    cudaEvent_t done;
    cudaEventCreateWithFlags(&inputs_ready, cudaEventDisableTiming);
    cudaEventCreateWithFlags(&done, cudaEventDisableTiming);
    cudaEventRecord(inputs_ready, caller.stream());
    cudaStreamWaitEvent(side.stream(), inputs_ready, 0);

    const int threads = 256;
    const int blocks = 1024;
    add_relu_kernel<<<blocks, threads, 0, side.stream()>>>(a.data_ptr<float>(), b.data_ptr<float>(),
                                                           out.data_ptr<float>(), n);

    cudaEventRecord(done, side.stream());
    cudaStreamWaitEvent(caller.stream(), done, 0);
    cudaEventDestroy(inputs_ready);
    cudaEventDestroy(done);
    return out;
}
"""

cpp_source = "torch::Tensor add_relu_joined(torch::Tensor a, torch::Tensor b);"

ext = load_inline(name="kg_honest_joined_stream", cpp_sources=cpp_source, cuda_sources=cuda_source,
                  functions=["add_relu_joined"], verbose=False)


class ModelNew(nn.Module):
    def forward(self, a, b):
        return ext.add_relu_joined(a.contiguous(), b.contiguous())
