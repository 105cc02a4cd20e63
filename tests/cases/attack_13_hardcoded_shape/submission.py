# docs/threats.md 13: hard-codes the problem's size (1024 x 1024) instead of reading it from its inputs. Against
# KernelBench-format problems, which fix their shapes, this is not cheating: the output is right for the
# shape the problem owns, and the grader says `correct`. (Extra shapes per problem, which would expose it,
# are not part of the problem format yet; see the integrity table in the issue note.)
import torch
import torch.nn as nn

N = 1024


class ModelNew(nn.Module):
    def forward(self, a, b):
        out = torch.empty(N, N)
        torch.add(a.view(N, N), b.view(N, N), out=out)
        return out.clamp_min_(0.0)
