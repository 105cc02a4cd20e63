# docs/threats.md 1: launches its matmul on a stream of its own and returns without joining it, so CUDA events
# recorded on the caller's stream see almost nothing of the kernel. The harness fingerprints the output as
# forward() returns and after a device-wide synchronize (they differ), times every rep with a host clock
# across a device-wide synchronize as well as with events (the two disagree), and keeps how long the device
# stays busy after the end event (with the stream held, the flush waits behind the matmul and hides all of it
# from the first check but its last wave; the device is still busy after the caller's stream is done).
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_source = r"""
#include <torch/extension.h>
#include <cuda_runtime.h>

#define TILE 32

__global__ void matmul_kernel(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C,
                              int N) {
    __shared__ float As[TILE][TILE];
    __shared__ float Bs[TILE][TILE];
    const int row = blockIdx.y * TILE + threadIdx.y;
    const int col = blockIdx.x * TILE + threadIdx.x;
    float acc = 0.0f;
    for (int t = 0; t < (N + TILE - 1) / TILE; ++t) {
        const int ac = t * TILE + threadIdx.x;
        const int br = t * TILE + threadIdx.y;
        As[threadIdx.y][threadIdx.x] = (row < N && ac < N) ? A[(size_t)row * N + ac] : 0.0f;
        Bs[threadIdx.y][threadIdx.x] = (br < N && col < N) ? B[(size_t)br * N + col] : 0.0f;
        __syncthreads();
        for (int k = 0; k < TILE; ++k) acc += As[threadIdx.y][k] * Bs[k][threadIdx.x];
        __syncthreads();
    }
    if (row < N && col < N) C[(size_t)row * N + col] = acc;
}

torch::Tensor matmul_side_stream(torch::Tensor A, torch::Tensor B) {
    static cudaStream_t side = nullptr;
    if (side == nullptr) {
        cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking);
    }
    const int N = static_cast<int>(A.size(0));
    auto C = torch::empty({N, N}, A.options());
    const dim3 threads(TILE, TILE);
    const dim3 blocks((N + TILE - 1) / TILE, (N + TILE - 1) / TILE);
    matmul_kernel<<<blocks, threads, 0, side>>>(A.data_ptr<float>(), B.data_ptr<float>(), C.data_ptr<float>(), N);
    return C;  // no join with the caller's stream: the kernel is still running
}
"""

cpp_source = "torch::Tensor matmul_side_stream(torch::Tensor A, torch::Tensor B);"

ext = load_inline(name="kg_attack_side_stream", cpp_sources=cpp_source, cuda_sources=cuda_source,
                  functions=["matmul_side_stream"], verbose=False)


class ModelNew(nn.Module):
    def forward(self, A, B):
        return ext.matmul_side_stream(A.contiguous(), B.contiguous())
