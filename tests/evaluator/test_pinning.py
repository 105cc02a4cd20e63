"""Host memory registered with CUDA (wire/pinning.py): a registration the driver refuses is not an error of the
thread's next kernel; a mapping's page tables are filled before its registration."""

from __future__ import annotations

import mmap
import os
from pathlib import Path

import pytest
import torch

from kernelgrade.evaluator.wire import pinning
from kernelgrade.evaluator.wire.pinning import _runtime, address_of, prefaulted, register_pinned, unregister_pinned


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


def _resident_kib(address: int) -> int:
    """The Rss of this process's mapping that starts at `address`: its pages present in the page tables."""
    lines = iter(Path("/proc/self/smaps").read_text().splitlines())
    for line in lines:
        if line.split("-", 1)[0] == f"{address:x}":
            for field in lines:
                if field.startswith("Rss:"):
                    return int(field.split()[1])
    raise AssertionError("no such mapping")


def test_a_prefaulted_mapping_has_its_page_tables_filled_and_its_contents_unchanged(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """What the judge's mapping of a region gets before its registration, here a mapping of a file whose pages are
    there already (as fallocate leaves them) and none in its page tables yet; each thread's slice filled in
    calls that do not divide it."""
    monkeypatch.setattr(pinning, "PREFAULT_CALL_BYTES", 5 * mmap.PAGESIZE)
    nbytes = 8 * 1024 * 1024 + 3 * mmap.PAGESIZE  # slices that do not divide it evenly
    fd = os.memfd_create("prefault-test")
    try:
        os.ftruncate(fd, nbytes)
        pattern = bytes(range(256)) * (nbytes // 256)
        os.pwrite(fd, pattern, 0)
        memory = mmap.mmap(fd, nbytes)
        address = address_of(memory)
        assert _resident_kib(address) == 0
        assert prefaulted(address, nbytes, threads=3)
        assert _resident_kib(address) == nbytes // 1024
        assert memory[:] == pattern
        memory.close()
    finally:
        os.close(fd)
