# docs/threats.md 6: tells checked calls from timed ones by counting (the checks come first) and, once the checks
# are over, skips the work and hands back the previous call's output. Checked and timed calls look alike to
# it only by count; the harness re-checks a random sample of timed outputs against the reference.
import torch
import torch.nn as nn

CHECKED_CALLS = 5


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.calls = 0
        self.last = None

    def forward(self, a, b):
        self.calls += 1
        if self.calls <= CHECKED_CALLS + 1 or self.last is None:
            self.last = torch.relu(a + b)
        return self.last
