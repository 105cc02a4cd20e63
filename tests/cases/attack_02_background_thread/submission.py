# docs/threats.md 2: forward() returns an empty output at once and a background thread fills it in afterwards,
# so the clock around forward() sees almost nothing. The harness fingerprints the output when forward()
# returns and again after synchronizing and waiting: the two differ.
import threading
import time

import torch
import torch.nn as nn

CHUNKS = 8


def fill(out, a, b):
    rows = out.shape[0] // CHUNKS
    for i in range(CHUNKS):
        sl = slice(i * rows, (i + 1) * rows)
        torch.add(a[sl], b[sl], out=out[sl]).relu_()
        time.sleep(0.002)  # a real attack overlaps its work with whatever the caller does next


class ModelNew(nn.Module):
    def forward(self, a, b):
        out = torch.empty_like(a)
        threading.Thread(target=fill, args=(out, a, b), daemon=True).start()
        return out
