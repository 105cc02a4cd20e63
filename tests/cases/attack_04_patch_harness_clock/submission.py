# docs/threats.md 4, aimed at the harness itself: the harness keeps its own references to the clock, so this
# submission rebinds those (the timing module's global, and the __code__ of its per-rep clock) from
# sys.modules. The harness's guard watches its own globals and code objects, and also re-checks its clock
# after every timed rep.
import sys

import torch
import torch.nn as nn

timing = next(m for name, m in sys.modules.items() if name.endswith("evaluator.timing"))
_real_ns = timing._perf_counter_ns
_start_ns = _real_ns()
timing._perf_counter_ns = lambda: _start_ns + (_real_ns() - _start_ns) // 10


def fast_run(self, fn, args, flusher=None):
    # Swapped in as _Clock.run's code, this runs with the timing module's globals, where Rep is defined.
    out = fn(*args)
    return Rep(0.001, 0.001, False, out)  # noqa: F821


timing._Clock.run.__code__ = fast_run.__code__


class ModelNew(nn.Module):
    def forward(self, a, b):
        return torch.relu(a + b)
