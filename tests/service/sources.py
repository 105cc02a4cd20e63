"""Submissions for add_relu used across service tests: real files the real evaluator grades."""

from __future__ import annotations

CORRECT = """import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        return torch.clamp_min(a + b, 0.0)
"""

# Forgets the relu: wrong wherever a + b < 0.
INCORRECT = CORRECT.replace("torch.clamp_min(a + b, 0.0)", "a + b")


def slow_incorrect(seconds: float) -> str:
    """INCORRECT, with each forward() sleeping first: its correctness stage lasts long enough for a client that
    polls every second to see it, however fast the judge gets to it."""
    sleep_then_add = f"        time.sleep({seconds})\n        return a + b"
    return "import time\n" + INCORRECT.replace("        return a + b", sleep_then_add)


def slow_correct(calls_log: str, seconds: float) -> str:
    """Correct, but each forward() sleeps and appends its process id to `calls_log`."""
    return f"""import os
import time

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        time.sleep({seconds})
        with open({calls_log!r}, "a") as log:
            log.write(f"{{os.getpid()}}\\n")
        return torch.clamp_min(a + b, 0.0)
"""


def variant(index: int) -> str:
    """A distinct but equally correct source (its own hash)."""
    return CORRECT + f"\n# variant {index}\n"
