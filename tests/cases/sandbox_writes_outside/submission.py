# Tries to write outside its work dir: /tmp, /var/tmp, /etc, the repository holding the grader, the grader's
# package and its Python installation. Any write that succeeds is undone and makes forward() return wrong
# values. (The sandbox's /tmp is its own, and read-only: a write there would not reach the host either.)
import os
import sys
from pathlib import Path

import kernelgrade
import torch
import torch.nn as nn

NAME = f"kg-escape-{os.getpid()}"
TARGETS = [Path("/tmp"), Path("/var/tmp"), Path("/etc"), Path(kernelgrade.__file__).resolve().parents[2],
           Path(kernelgrade.__file__).resolve().parent, Path(sys.prefix)]


def escaped():
    wrote = False
    for directory in TARGETS:
        target = directory / NAME
        try:
            target.write_text("written from inside the sandbox")
        except OSError:
            continue
        wrote = True
        target.unlink()
    return wrote


class ModelNew(nn.Module):
    def forward(self, a, b):
        out = torch.relu(a + b)
        return out - 1.0 if escaped() else out
