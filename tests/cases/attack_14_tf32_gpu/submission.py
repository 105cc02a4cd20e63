# docs/threats.md 14, the H100 classic: turns TF32 on for cuBLAS inside forward() and calls torch.matmul, which then
# runs on tensor cores about eight times faster and passes allclose(atol=rtol=1e-4) on this problem. The
# harness snapshots the precision switches around every call and flags the change; the fp32 policy's oracle
# check refuses the TF32 error as well.
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, A, B):
        torch.backends.cuda.matmul.allow_tf32 = True
        return torch.matmul(A, B)
