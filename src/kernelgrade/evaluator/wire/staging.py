"""Large GPU tensors to and from a tensor file through small pinned buffers. Written: two buffers in turn, while
one buffer's bytes are written to the file the other is being copied from the device. Read: READ_WORKERS pieces at
once, each read from its place in the file into a buffer of its own and copied from there to the device.

Moved whole instead, a tensor past tensorfile.PINNED_MAX_BYTES crossed through pageable host memory of its own
size: a page fault per 4 KiB on first touch and a copy at pageable speed, after which the file was written
(or, reading, the device copy began) only once the whole tensor was on the host. The 2 GiB outputs of
KernelBench's 2_ConvTranspose2d_BiasAdd_Clamp_Scaling_Clamp_Divide took that way, on every trial and every
re-checked timed output.
"""

from __future__ import annotations

import ctypes
import os
import queue
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor

import torch

# Each buffer: large enough that a copy's launch costs nothing next to it, small enough that the
# pinned memory a judge or child keeps cached for them stays small.
STAGE_BYTES = 64 * 1024 * 1024
# Pieces read at once. A read from the page cache runs at one core's copy speed, and a run child's warm-up reads
# every timing set: on an H200 host, KernelBench softmax's warm-ups (6 GiB sets) took 2.7-4.2 s reading from one
# thread, and in a mixed stream of 14 KernelBench problems the warm-ups took 31.2 s in all from one thread, 12.8 s
# from four (before and after the change, in one run). At most as many as the process may run on (a run child is
# placed on its job's cores).
READ_WORKERS = 4
# A host-to-host copy at least this large goes through the device instead where both ends are memory CUDA can
# copy straight from and to (copy_through_device): below it, starting two streams costs more than it saves.
THROUGH_DEVICE_MIN_BYTES = 8 * 1024 * 1024


def byte_view(address: int, size: int) -> memoryview:
    """`size` bytes of host memory at `address`, without copying them (tensorfile reads and writes through it)."""
    return memoryview((ctypes.c_char * size).from_address(address)).cast("B")


def flat_bytes(tensor: torch.Tensor) -> torch.Tensor:
    """A contiguous tensor's bytes as a flat uint8 view of the same memory."""
    return tensor.reshape(-1).view(torch.uint8)


def _spans(total: int) -> list[tuple[int, int]]:
    return [(offset, min(STAGE_BYTES, total - offset)) for offset in range(0, total, STAGE_BYTES)]


def _buffers(total: int, count: int = 2) -> list[torch.Tensor]:
    return [torch.empty(min(STAGE_BYTES, total), dtype=torch.uint8, pin_memory=True) for _ in range(count)]


def device_chunks(tensor: torch.Tensor) -> Iterator[memoryview]:
    """A contiguous GPU tensor's bytes, in order; each view is valid until the next is asked for. The copy of
    the next piece runs while the caller writes this one."""
    flat, spans = flat_bytes(tensor), _spans(tensor.numel() * tensor.element_size())
    if not spans:
        return
    stream = torch.cuda.current_stream(tensor.device)
    buffers, copied = _buffers(spans[0][1]), [torch.cuda.Event() for _ in range(2)]  # type: ignore[no-untyped-call]

    def start(k: int) -> None:
        offset, size = spans[k]
        buffers[k % 2][:size].copy_(flat[offset:offset + size], non_blocking=True)
        copied[k % 2].record(stream)

    start(0)
    for k, (_, size) in enumerate(spans):
        if k + 1 < len(spans):
            start(k + 1)  # into the buffer the caller has finished with: it asked for this piece
        copied[k % 2].synchronize()
        yield byte_view(buffers[k % 2].data_ptr(), size)


def read_to_device(shape: list[int], dtype: torch.dtype, device: torch.device,
                   read_at: Callable[[memoryview, int], int], start: int) -> torch.Tensor | None:
    """A tensor of `shape` and `dtype` on `device`, its bytes read from position `start` on with `read_at` (which
    fills what it can of a view from a position and says how much; called from READ_WORKERS threads at once); None
    where the file ended first. On the CPU the pieces are read straight into the tensor."""
    tensor = torch.empty(shape, dtype=dtype, device=device)
    flat, spans = flat_bytes(tensor), _spans(tensor.numel() * tensor.element_size())
    if not spans:
        return tensor
    workers = max(1, min(READ_WORKERS, len(spans), len(os.sched_getaffinity(0))))
    free: queue.SimpleQueue[torch.Tensor] = queue.SimpleQueue()
    for buffer in _buffers(spans[0][1], workers) if device.type == "cuda" else []:  # the CPU reads in place
        free.put(buffer)

    def piece(span: tuple[int, int]) -> bool:
        offset, size = span
        if device.type != "cuda":
            return read_at(byte_view(flat.data_ptr() + offset, size), start + offset) == size
        buffer = free.get()
        try:
            if read_at(byte_view(buffer.data_ptr(), size), start + offset) != size:
                return False
            flat[offset:offset + size].copy_(buffer[:size], non_blocking=True)
            copied = torch.cuda.Event()  # type: ignore[no-untyped-call]
            copied.record(torch.cuda.current_stream(device))
            copied.synchronize()  # before the buffer is read into again; ready when returned, as a whole copy is
        finally:
            free.put(buffer)
        return True

    with ThreadPoolExecutor(workers, thread_name_prefix="staging-read") as pool:
        return tensor if all(list(pool.map(piece, spans))) else None


def copy_through_device(dst: torch.Tensor, src: torch.Tensor, device: torch.device) -> bool:
    """`dst` <- `src`, two flat byte tensors of host memory that CUDA copies to and from by DMA (pinned, or registered
    like a run child's shared region), copied onto `device` and back, a STAGE_BYTES piece at a time on two streams,
    so that one piece comes back while the next goes out. False, nothing copied, where the device has no room for
    the two pieces. Why: torch copies host memory with as many threads as the process has cores, and a GPU judge
    has a few of its own (worker/cores.py) that its other threads share; in mixed streams on an H200 host the
    judge placed KernelBench softmax's 6 GiB trial inputs into the child's region in 0.45-0.5 s each against 0.2 s
    alone on the host's 16 cores, while a DMA copy runs at about 55 GB/s each way and takes no core."""
    total = src.numel()
    streams = _copy_streams(device)
    try:
        pieces = [_piece_on(stream, min(STAGE_BYTES, total)) for stream in streams]
    except torch.OutOfMemoryError:
        return False
    for k, (offset, size) in enumerate(_spans(total)):
        # A piece goes out and comes back on one stream, which orders the reuse of its device piece.
        with torch.cuda.stream(streams[k % 2]):
            pieces[k % 2][:size].copy_(src[offset:offset + size], non_blocking=True)
            dst[offset:offset + size].copy_(pieces[k % 2][:size], non_blocking=True)
    for stream in streams:
        stream.synchronize()
    return True


def _piece_on(stream: torch.cuda.Stream, nbytes: int) -> torch.Tensor:
    """Device memory for a piece, allocated on the stream that uses it. The streams wait for nothing on the judge's
    stream: its copies to and from host memory (a region's outputs read back, inputs brought to the host) are
    synchronous, so none touches either end now, and waiting would put this copy behind the next trial's making,
    which another thread queues there. But torch's caching allocator hands a block freed on a stream to the next
    allocation on that stream at once, its queued writes still to come. A piece allocated on the judge's stream
    can so be written over by the making's kernels while it carries a trial's inputs, which then reach the run
    child changed: on an H200 host, blocks written that way on purpose changed 47 of 256 MiB copied
    (tests/evaluator/test_tensorfile.py), and in a mixed stream there KernelBench's 94_MSELoss, its reference
    itself, was judged input_mutated. On a stream of its own a piece takes only blocks that stream freed, behind
    everything it queued."""
    with torch.cuda.stream(stream):
        return torch.empty(nbytes, dtype=torch.uint8, device=stream.device)


_COPY_STREAMS: dict[int, list[torch.cuda.Stream]] = {}
_COPY_STREAMS_LOCK = threading.Lock()


def _copy_streams(device: torch.device) -> list[torch.cuda.Stream]:
    """The two streams copy_through_device uses on `device`, the same ones every time: the pieces the allocator
    keeps cached for them are then one pair per device, not one for each stream of torch's pool."""
    index = torch.cuda.current_device() if device.index is None else device.index
    with _COPY_STREAMS_LOCK:
        if index not in _COPY_STREAMS:
            _COPY_STREAMS[index] = [torch.cuda.Stream(index) for _ in range(2)]  # type: ignore[no-untyped-call]
        return _COPY_STREAMS[index]
