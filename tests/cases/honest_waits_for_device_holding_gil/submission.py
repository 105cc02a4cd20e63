# An honest forward() that waits for the device from code holding Python's GIL, as a pybind11 extension calling
# cudaDeviceSynchronize does (ctypes.PyDLL keeps the GIL through the call). Behind a held stream nothing in this
# process could let the device go: the judge's watch releases it from outside, the timing loop stops holding
# for the phase, and the verdict is that of the kernel.
import ctypes

import torch
import torch.nn as nn

_driver = ctypes.PyDLL("libcuda.so.1")


class ModelNew(nn.Module):
    def forward(self, a, b):
        out = torch.clamp_min(a + b, 0.0)
        _driver.cuCtxSynchronize()
        return out
