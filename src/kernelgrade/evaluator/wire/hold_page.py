"""The page of shared memory a held stream waits on, and how the judge releases it when the host cannot.

A timed rep's stream waits until the page's `released` word reaches the rep's generation (stream_hold.py);
the timing loop writes it once the whole rep is enqueued. A forward() that waits for the device itself would
then wait forever, and one that does so from compiled code holding Python's GIL (a pybind11 function calling
cudaDeviceSynchronize, say) keeps every thread of its process from running. So the release of last resort
comes from another process: the judge creates the page as a file in the run child's work dir before the
child starts, maps it itself, and while the child times, a thread of the judge's (host/hold_watch.py) writes
`released` for any rep still held past its deadline. The child maps the same file and registers it with
CUDA, so the device reads what either process writes.

Layout (native byte order, 8-byte aligned): released u32 at 0, armed u64 at 8, deadline i64 at 16 (in
CLOCK_MONOTONIC nanoseconds, which both processes read alike).
"""

from __future__ import annotations

import ctypes
import mmap
import os
from pathlib import Path

PAGE_NAME = "stream-hold.page"
PAGE_BYTES = 4096


class HoldPage:
    """One mapping of a hold page: in the child (`open`), the judge (`create`), or the judge alone (`private`)."""

    def __init__(self, memory: mmap.mmap) -> None:
        self.memory = memory
        self._released = ctypes.c_uint32.from_buffer(memory, 0)
        self._armed = ctypes.c_uint64.from_buffer(memory, 8)
        self._deadline = ctypes.c_int64.from_buffer(memory, 16)
        self.address = ctypes.addressof(self._released)

    @classmethod
    def create(cls, path: Path) -> HoldPage:
        """The judge's mapping of a new page file, made before the child exists so that nothing the child does
        to the path later (a symlink, a new file) changes what the judge writes to."""
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o666)
        try:
            os.fchmod(fd, 0o666)  # the child may run under a uid of its own
            os.ftruncate(fd, PAGE_BYTES)
            return cls(mmap.mmap(fd, PAGE_BYTES))
        finally:
            os.close(fd)

    @classmethod
    def open(cls, path: Path) -> HoldPage | None:
        """The child's mapping of the page its judge made; None where there is none (a judge without one)."""
        try:
            fd = os.open(path, os.O_RDWR | os.O_NOFOLLOW | os.O_CLOEXEC)
        except OSError:
            return None
        try:
            if os.fstat(fd).st_size != PAGE_BYTES:
                return None
            return cls(mmap.mmap(fd, PAGE_BYTES))
        finally:
            os.close(fd)

    @classmethod
    def private(cls) -> HoldPage:
        """A page only this process maps (the judge's own reference timing)."""
        return cls(mmap.mmap(-1, PAGE_BYTES))

    @property
    def released(self) -> int:
        return int(self._released.value)

    def arm(self, generation: int, deadline_ns: int) -> None:
        self._deadline.value = deadline_ns
        self._armed.value = generation

    def release(self, generation: int) -> bool:
        """Let the rep of `generation` run; False if something else (the judge's watch) already had."""
        by_us = self._released.value < generation
        self._released.value = generation & 0xFFFFFFFF
        return by_us

    def release_if_late(self, now_ns: int) -> bool:
        """The watch's step: release the armed rep if its deadline has passed and it is still held. The word only
        ever grows, so a late write never takes back a newer release."""
        armed = int(self._armed.value)
        if armed <= self._released.value or now_ns < int(self._deadline.value):
            return False
        self._released.value = armed & 0xFFFFFFFF
        return True
