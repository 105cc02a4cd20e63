# docs/threats.md 18: answers the checked calls correctly, then exits with status 0 as soon as timing starts,
# hoping a grader takes "passed, exited cleanly" as a result without times (or with whatever it had). An early
# exit or a missing record is a failure: the verdict is a crash in the timing stage.
import os

import torch
import torch.nn as nn

CHECKED_CALLS = 5


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.calls = 0

    def forward(self, a, b):
        self.calls += 1
        if self.calls > CHECKED_CALLS:
            os._exit(0)
        return torch.relu(a + b)
