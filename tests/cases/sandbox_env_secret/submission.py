# Looks for a secret the grader holds in its environment: in its own environment, and in every process's
# /proc/PID/environ it can read (the judge's among them, without a pid namespace). Finding it makes
# forward() return wrong values, so `correct` means the secret never reached the sandbox.
import os

import torch
import torch.nn as nn

NAME = b"KERNELGRADE_TEST_SECRET"


def secret_visible():
    if NAME.decode() in os.environ:
        return True
    for pid in os.listdir("/proc"):
        try:
            with open(f"/proc/{pid}/environ", "rb") as f:
                if NAME in f.read():
                    return True
        except OSError:
            pass
    return False


class ModelNew(nn.Module):
    def forward(self, a, b):
        out = torch.relu(a + b)
        return out * 2.0 if secret_visible() else out
