# docs/threats.md 19: tries the ways out of the box that would let it learn the judge's secrets or leave traces:
# the judge's environment (where the seed secret lives), a TCP service on the host, a file outside its work
# dir, and other GPUs' device nodes. Any success makes forward() return wrong values, so `correct` means
# the sandbox held on every count.
import glob
import os
import socket

import torch
import torch.nn as nn

SECRET = b"KERNELGRADE_SEED_SECRET"


def judge_environment_visible():
    for path in glob.glob("/proc/[0-9]*/environ"):
        try:
            with open(path, "rb") as f:
                if SECRET in f.read():
                    return True
        except OSError:
            pass
    return SECRET.decode() in os.environ


def host_service_reachable():
    try:
        socket.create_connection(("127.0.0.1", 47291), timeout=0.5).close()
        return True
    except OSError:
        return False


def wrote_outside():
    for path in (os.path.join(os.path.dirname(os.getcwd()), "escaped-from-the-box"), "/tmp/escaped-from-the-box"):
        try:
            with open(path, "w") as f:
                f.write("out")
            os.unlink(path)
            return True
        except OSError:
            pass
    return False


def other_gpus():
    mine = os.environ.get("CUDA_VISIBLE_DEVICES", "")
    nodes = [n for n in glob.glob("/dev/nvidia[0-9]*") if n[len("/dev/nvidia"):] != mine]
    return any(os.access(n, os.R_OK | os.W_OK) for n in nodes)


class ModelNew(nn.Module):
    def forward(self, a, b):
        out = torch.relu(a + b)
        escaped = [judge_environment_visible(), host_service_reachable(), wrote_outside(), other_gpus()]
        return out + 1.0 if any(escaped) else out
