# docs/threats.md 4, hiding from checks made between operations: forward() rebinds the harness's clock so that
# the reading taken right after it returns says the call took a microsecond, and a thread puts the real
# clock back a millisecond later, before any check the harness makes between its operations. The harness
# also re-checks its clock after every timed rep, while the rebinding is still in place.
import sys
import threading
import time

import torch
import torch.nn as nn

timing = next(m for name, m in sys.modules.items() if name.endswith("evaluator.timing"))
_real_ns = timing._perf_counter_ns


def restore_soon():
    time.sleep(0.001)
    timing._perf_counter_ns = _real_ns


class ModelNew(nn.Module):
    def forward(self, a, b):
        entered = _real_ns()
        out = torch.relu(a + b)
        timing._perf_counter_ns = lambda: entered + 1000
        threading.Thread(target=restore_soon, daemon=True).start()
        return out
