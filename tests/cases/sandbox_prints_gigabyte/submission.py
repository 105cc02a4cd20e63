# Prints a gigabyte (256 MiB in each of its first four calls) and then computes the right answer. The judge
# must drain the output without storing it (only a capped head and tail are kept) and still grade it.
import sys

import torch
import torch.nn as nn

LINE = "spam " * 200 + "\n"
calls = 0


class ModelNew(nn.Module):
    def forward(self, a, b):
        global calls
        calls += 1
        if calls <= 4:
            block = LINE * (1024 * 1024 // len(LINE))
            for _ in range(256):
                sys.stdout.write(block)
            sys.stdout.flush()
        return torch.relu(a + b)
