# docs/threats.md 5: forward() returns an unwritten buffer at once; a host thread gathers the pending calls and
# computes them together in one batched launch on a stream of its own, shortly after. Outputs are still being
# written when forward() returns. The harness fingerprints each output as forward() returns and again after
# a device-wide synchronize and a settle: they differ.
import threading
import time

import torch
import torch.nn as nn

pending = []
lock = threading.Lock()
stream = None


def run_batch():
    time.sleep(0.0005)
    with lock:
        batch = pending[:]
        pending.clear()
    if not batch:
        return
    with torch.cuda.stream(stream):
        a = torch.stack([p[0] for p in batch])
        b = torch.stack([p[1] for p in batch])
        result = torch.relu(a + b)
        for (_, _, out), value in zip(batch, result):
            out.copy_(value)


class ModelNew(nn.Module):
    def forward(self, a, b):
        global stream
        if stream is None:
            stream = torch.cuda.Stream()
        out = torch.empty_like(a)
        with lock:
            pending.append((a, b, out))
            first = len(pending) == 1
        if first:
            threading.Thread(target=run_batch, daemon=True).start()
        return out
