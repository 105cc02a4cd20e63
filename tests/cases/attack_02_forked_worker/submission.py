# docs/threats.md 2, the process variant: a worker process forked at import computes into shared memory while
# forward() returns the shared output buffer at once. The harness sees the output change after return; the
# judge also sees an extra process in the child's tree.
import os
import time

import torch
import torch.nn as nn

N = 1024
shared_a = torch.empty(N, N).share_memory_()
shared_b = torch.empty(N, N).share_memory_()
shared_out = torch.empty(N, N).share_memory_()
read_end, write_end = os.pipe()

if os.fork() == 0:
    torch.set_num_threads(1)
    while os.read(read_end, 1):
        for i in range(0, N, 128):
            torch.add(shared_a[i:i + 128], shared_b[i:i + 128], out=shared_out[i:i + 128]).relu_()
            time.sleep(0.002)
    os._exit(0)


class ModelNew(nn.Module):
    def forward(self, a, b):
        shared_a.copy_(a)
        shared_b.copy_(b)
        shared_out.fill_(0.0)
        os.write(write_end, b"x")
        return shared_out
