"""Host memory registered with CUDA: a registration the driver refuses is not an error of the thread's next
kernel (wire/pinning.py)."""

from __future__ import annotations

import mmap

import pytest
import torch

from kernelgrade.evaluator.wire.pinning import _runtime, address_of, register_pinned, unregister_pinned


@pytest.mark.gpu
def test_a_refused_registration_leaves_no_error_for_the_next_kernel() -> None:
    torch.ones(1, device="cuda")  # the runtime loaded, as it is wherever the judge registers memory
    assert _runtime() is not None
    memory = mmap.mmap(-1, 1 << 20)
    address = address_of(memory)
    assert register_pinned(address, 1 << 20)
    try:
        assert not register_pinned(address, 1 << 20)  # registered already: refused
        assert float(torch.ones(4, device="cuda").sum()) == 4.0
    finally:
        unregister_pinned(address)
        memory.close()
