# docs/threats.md 14: switches global precision settings (TF32 matmuls, "medium" fp32 matmul precision, which on
# CPUs with bf16 units lets oneDNN use them) so that torch's own matmul runs at lower precision. The harness
# sets strict fp32 before loading, snapshots every such switch and flags a change.
import torch
import torch.nn as nn

torch.backends.cuda.matmul.allow_tf32 = True
torch.backends.cudnn.allow_tf32 = True
torch.set_float32_matmul_precision("medium")


class ModelNew(nn.Module):
    def forward(self, a, b):
        return torch.matmul(a, b)
