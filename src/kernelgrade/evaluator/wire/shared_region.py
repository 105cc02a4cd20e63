"""Shared memory of a judge and one run child, through which a checked call's inputs and outputs cross instead of
files: the inputs the judge writes at its start, the outputs the child writes after them.

On an H200 host a 2 GiB CUDA output took 0.9-1.0 s to cross a tensor file (the child's write 0.45-0.55 s, the
judge's read 0.42-0.49 s, its removal 0.06 s; on a tmpfs no faster) and 0.08 s to cross this region once both
processes had registered it with CUDA (0.04 s each way, a DMA copy with no page faults and no file system);
the child's registration took 0.16-0.20 s, once. A problem with large outputs crosses them on every trial.

The judge makes the region before the child starts: a memfd the child inherits, sealed at once so that its size
can never shrink and no other seal can be added. The child must be able to write it, and with a descriptor it
could otherwise truncate the file under the judge's mapping, where the judge's next read would be a SIGBUS that
kills the judge. The judge alone grows it (reserve), before the request that may use it; the child maps what
the request names. One region per child, never handed to another: a region one child has mapped stays open to
it, and a region two shared would show one child's outputs to the other.

What the child writes there is read like a tensor file it wrote (tensorfile.load_from_memory): the header is
copied before it is parsed and bounds every read, so a child that rewrites the region while the judge reads it
can only spoil its own outputs. The inputs the judge writes there are only the child's copy: the judge keeps its
own, and judges the outputs against what it computed from those.
"""

from __future__ import annotations

import contextlib
import fcntl
import mmap
import os

from kernelgrade.evaluator.wire import staging
from kernelgrade.evaluator.wire.pinning import address_of, prefaulted, register_pinned, unregister_pinned

# A region grows to a whole number of these steps: MiB up to 64 MiB, 64 MiB beyond. Each new size is mapped and
# registered with CUDA again by both processes (0.04-0.1 s per GiB on an H200), and a problem's outputs vary
# little from one trial to the next; a small problem's region stays small, its registration quick.
_SMALL_STEP_BYTES = 1024 * 1024
_STEP_BYTES = 64 * 1024 * 1024
# Values placed one after another in a region start at multiples of this: a page, where copies run at full speed.
ALIGN = 4096


class SharedRegion:
    """One process's mapping of a region: the judge's (`create`) or the child's (`attach`)."""

    def __init__(self, fd: int, pin: bool, owner: bool) -> None:
        self.fd = fd
        self.pin = pin  # register mappings with CUDA (a process that copies to or from a GPU)
        # The judge maps only what it reserved: the child may grow the file, and a judge that mapped (and
        # registered, which allocates) whatever size it found could be made to take any amount of memory.
        self.owner = owner
        self.reserved = 0
        self.refused = False  # whether CUDA refused to register a mapping of it (copies then run slower)
        self._memory: mmap.mmap | None = None
        self._address = 0

    @classmethod
    def create(cls, pin: bool) -> SharedRegion:
        """The judge's new, empty region. Its descriptor closes on exec: a launcher passes it to the one child
        it is made for (ChildSpec.shared_fds)."""
        fd = os.memfd_create("kernelgrade-outputs", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
        fcntl.fcntl(fd, fcntl.F_ADD_SEALS, fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_SEAL)
        return cls(fd, pin, owner=True)

    @classmethod
    def attach(cls, fd: int, pin: bool) -> SharedRegion | None:
        """The child's mapping of the region its judge made; None where `fd` is not one (a launcher that did not
        pass it on): the outputs then cross as files."""
        try:
            seals = fcntl.fcntl(fd, fcntl.F_GET_SEALS)
        except OSError:
            return None
        return cls(fd, pin, owner=False) if seals & fcntl.F_SEAL_SHRINK else None

    def reserve(self, nbytes: int) -> memoryview:
        """The judge's view of the region's first `nbytes`, grown to hold them first."""
        self.reserved = max(self.reserved, _rounded(nbytes))
        if os.fstat(self.fd).st_size < self.reserved:
            os.ftruncate(self.fd, self.reserved)
            # Its new pages given to the file before it is mapped: registering a mapping with CUDA faults fresh
            # pages in from the one calling thread, and so does a copy into it. On an H200 host 6 GiB took 2.8 s
            # to register fresh, 0.6 s to be given pages and 0.8 s to register after that (bench/host_transfers.py,
            # one run); a large problem's region grows while its first trial waits.
            self.populate(self.reserved)
        view = self.view(nbytes)
        assert view is not None, "the region was just grown"
        return view

    def populate(self, nbytes: int) -> None:
        """The judge's, before its child uses the region: the first `nbytes` (whole steps) given their pages now.
        A region's first growth is mostly page faults, which touch no device: on an H200 host registering a fresh
        256 MiB region with CUDA took 108.5 ms, putting its pages in place 116.5 ms and registering it after that
        9.6 ms. The judge does it while a spare waits (run_children.py), off the evaluation that takes it.
        The pages go to the file itself (fallocate), through no mapping of the judge's: pages put in place through
        a mapping (MAP_POPULATE) hold the judge's memory map for that long, 0.3-1.5 s for 512 MiB on an H200 host
        in a mixed stream, and every mmap of the judge's other threads (a region's growth, a thread's stack)
        waited for it."""
        size = _rounded(nbytes)
        if size == 0:
            return
        with contextlib.suppress(OSError):  # a refusal (a memory limit) leaves the faults to the first growth
            os.posix_fallocate(self.fd, 0, size)  # releases the GIL, as the judge's other threads need

    def view(self, nbytes: int) -> memoryview | None:
        """The region's first `nbytes`, mapped here if they were not; None where the region is smaller (for the
        judge: than it reserved). The judge maps what it reserved, the child what it was offered: a file given
        pages ahead for a larger problem is larger, and each byte mapped is registered with CUDA."""
        if nbytes == 0:
            return memoryview(bytearray())
        if self._memory is None or len(self._memory) < nbytes:
            size = self.reserved if self.owner else nbytes
            if size < nbytes or os.fstat(self.fd).st_size < nbytes:
                return None
            self._map(size)
        return staging.byte_view(self._address, nbytes)

    def describe(self) -> str:
        """The judge's side of the region, for the results record: how large it grew and whether its copies ran
        as DMA. A stream's copies into regions ran 2-3 times slower than one problem's alone on an H200 host;
        this tells a refused registration from the rest."""
        if self.reserved == 0:
            return "unused"
        size = (f"{self.reserved / 1024**3:.2f} GiB" if self.reserved >= 1024**3
                else f"{self.reserved / 1024**2:.0f} MiB")
        if self.refused:
            return f"{size}, registration with CUDA refused: copies through the driver's staging"
        return f"{size}, registered with CUDA" if self.pin else f"{size}, host memory"

    def close(self) -> None:
        self._unmap()
        with contextlib.suppress(OSError):
            os.close(self.fd)

    def _map(self, size: int) -> None:
        self._unmap()
        memory = mmap.mmap(self.fd, size)
        self._memory, self._address = memory, address_of(memory)
        if self.pin:
            # Page tables filled from several threads first, where the registration would fill them from one.
            # On an H200 host, for a 12 GiB region given its pages by fallocate, the judge's mapping: 4.0-4.5 s to
            # register, against 0.6-0.7 s to fill and 0.5-0.6 s to register; a second mapping, as the child's:
            # 1.1-1.6 s, against 0.5 s and 0.5-0.6 s (two runs each).
            prefaulted(self._address, size)
        if self.pin and not register_pinned(self._address, size):
            # Refused (a limit on locked memory): copies still work, through the driver's staging, slower.
            self.pin, self.refused = False, True

    def _unmap(self) -> None:
        if self._memory is None:
            return
        if self.pin:
            unregister_pinned(self._address)
        self._memory.close()
        self._memory, self._address = None, 0


def aligned(offset: int) -> int:
    """Where the next value placed after `offset` starts."""
    return -(-offset // ALIGN) * ALIGN


def _rounded(nbytes: int) -> int:
    step = _SMALL_STEP_BYTES if nbytes <= _STEP_BYTES else _STEP_BYTES
    return -(-nbytes // step) * step
