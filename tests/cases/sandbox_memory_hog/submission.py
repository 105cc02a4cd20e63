# Allocates (and touches) memory in 64 MiB chunks until it holds twice the machine's RAM. The run child's
# memory cgroup (capped at 512 MiB for this case) must kill it long before that. The safety valve is for
# hosts where the cap is missing: it stops while a quarter of RAM is still free, so the host survives
# either way (and the sandbox also makes the child the kernel OOM killer's first victim).
import os

import torch
import torch.nn as nn

CHUNK = 64 * 1024 * 1024


def available_bytes():
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    return 0


def hog():
    total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    chunks = []
    while len(chunks) * CHUNK < 2 * total:
        if available_bytes() < total // 4:
            raise MemoryError(f"safety valve: {len(chunks) * CHUNK >> 20} MiB held and nothing stopped me")
        chunks.append(torch.ones(CHUNK // 4))
    return chunks


class ModelNew(nn.Module):
    def forward(self, a, b):
        hog()
        return torch.relu(a + b)
