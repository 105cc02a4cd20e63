import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

scale_source = r"""
#include <torch/extension.h>
#include <c10/cuda/CUDAStream.h>

__global__ void scale_kernel(const float* __restrict__ a, float s, float* __restrict__ out, int64_t n) {
    int64_t stride = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        out[i] = a[i] * s;
    }
}

torch::Tensor scale_cuda(torch::Tensor a, double s) {
    TORCH_CHECK(a.is_cuda() && a.scalar_type() == torch::kFloat32, "a must be a float32 CUDA tensor");
    auto input = a.contiguous();
    auto out = torch::empty_like(input);
    int64_t n = input.numel();
    int threads = 256;
    int64_t blocks = std::min<int64_t>((n + threads - 1) / threads, 65535LL * 8);
    scale_kernel<<<blocks, threads, 0, c10::cuda::getCurrentCUDAStream()>>>(
        input.data_ptr<float>(), (float)s, out.data_ptr<float>(), n);
    return out;
}
"""

scale = load_inline(
    name="naive_matrix_scalar",
    cpp_sources="torch::Tensor scale_cuda(torch::Tensor a, double s);",
    cuda_sources=scale_source,
    functions=["scale_cuda"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, s: float) -> torch.Tensor:
        return scale.scale_cuda(A, s)
