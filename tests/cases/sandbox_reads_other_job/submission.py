# Looks for other jobs' files: siblings of its work dir (the harness plants one, as a concurrent job would
# leave its inputs there) and other entries of the compile cache (other submissions' sources and builds).
# Seeing any makes forward() return wrong values.
import os
from pathlib import Path

import torch
import torch.nn as nn


def others_visible():
    work = Path.cwd()
    if any(p.name != work.name for p in work.parent.iterdir()):
        return True
    entry = Path(os.environ["TORCH_EXTENSIONS_DIR"]).parent
    try:
        return any(p.name != entry.name for p in entry.parent.iterdir())
    except OSError:
        return False


class ModelNew(nn.Module):
    def forward(self, a, b):
        out = torch.relu(a + b)
        return out + 3.0 if others_visible() else out
