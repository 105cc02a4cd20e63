# docs/threats.md 4: replaces the clocks a harness would read (time.perf_counter*, CUDA event timing and
# synchronize) with ones that run ten times slow, so any time measured through them shrinks tenfold. The
# harness captured its clocks before importing the submission, and checks that nothing it relies on was
# rebound.
import time

import torch
import torch.nn as nn

_real_ns = time.perf_counter_ns
_real = time.perf_counter
_start_ns = _real_ns()


def slow_ns():
    return _start_ns + (_real_ns() - _start_ns) // 10


def slow():
    return slow_ns() / 1e9


time.perf_counter_ns = slow_ns
time.perf_counter = slow
time.monotonic = slow
_elapsed = torch.cuda.Event.elapsed_time
torch.cuda.Event.elapsed_time = lambda self, end: _elapsed(self, end) / 10
torch.cuda.synchronize = lambda device=None: None


class ModelNew(nn.Module):
    def forward(self, a, b):
        return torch.relu(a + b)
