"""A tensor file format the judge can read from an untrusted child without unpickling anything.

Layout: 8-byte little-endian header length, a JSON header, then the raw bytes of each tensor.
The header describes a (possibly nested) list of values: tensors, and JSON scalars, lists and tuples.

That byte stream may be cut into parts: `name`, then `name.part1`, `name.part2`, ... in the same directory,
each no larger than the writer's file-size limit (RLIMIT_FSIZE in the sandbox), so that an output larger than
the limit still crosses. The reader derives the part names from the one path it was given and reads them as
one stream, so a child cannot make it open anything else.
"""

from __future__ import annotations

import contextlib
import json
import os
import resource
import shutil
import stat
import struct
import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from io import BufferedReader, FileIO
from pathlib import Path
from typing import Any, Protocol

import torch

from kernelgrade.evaluator.wire import staging

_DTYPES: dict[str, torch.dtype] = {
    "float64": torch.float64,
    "float32": torch.float32,
    "float16": torch.float16,
    "bfloat16": torch.bfloat16,
    "int64": torch.int64,
    "int32": torch.int32,
    "int16": torch.int16,
    "int8": torch.int8,
    "uint8": torch.uint8,
    "bool": torch.bool,
    "complex64": torch.complex64,
    "complex128": torch.complex128,
}
_NAMES = {v: k for k, v in _DTYPES.items()}
# Bounds what a child can make the judge allocate while describing a file.
MAX_HEADER_BYTES = 8 * 1024 * 1024
# Tensors are written and read in pieces of this size: far below 2 GiB, large enough that the per-call cost
# is nothing next to the disk's.
_CHUNK_BYTES = 256 * 1024 * 1024
# GPU tensors up to this size cross through pinned host memory of their own size: a DMA copy at full speed into a
# buffer the caching host allocator hands out again, where a fresh pageable one would take a page fault per 4 KiB.
# Larger ones cross a piece at a time through two pinned buffers of this size (staging.py), the copy to or from the
# device beside the file's write or read. The allocator pins a buffer the first time a process asks for its size,
# and every evaluation's run child is a fresh process: on an H200 host, a fresh process's first save of a 512 MiB
# CUDA tensor took 0.39-0.57 s whole and 0.19 s in pieces (0.14-0.16 s either way once warm; loads alike).
PINNED_MAX_BYTES = staging.STAGE_BYTES
# A file of host tensors larger than this is written as parts of this size, several at once, where the writer asks
# (save(workers=...): the judge's timing sets). A file system takes one file's buffered writes one at a time (ext4
# and tmpfs hold the file's lock through each), and on an H200 host one thread wrote a 6 GiB file at 2.5 GB/s into
# the page cache; KernelBench's 94_MSELoss (two 4 GiB inputs per set) waited 7 s per evaluation for its timing sets
# to be made and written.
WRITE_PART_BYTES = 1024**3
# Parts written at once by a writer that asks: a share of a GPU host's cores, beside its judges and run children.
WRITE_WORKERS = 4
# Bounds the files a reader opens for one tensor file. With the sandbox's 4 GiB parts that is 4 TiB, more than
# any device holds; a writer under a limit so low that it would need more fails instead.
MAX_PARTS = 1024


class TensorFileError(Exception):
    pass


def dtype_name(dtype: torch.dtype) -> str:
    return _NAMES.get(dtype, str(dtype))


def part_path(path: Path, index: int) -> Path:
    """The name of part `index` of the file at `path`: the path itself, then siblings named after it."""
    return path if index == 0 else path.with_name(f"{path.name}.part{index}")


def part_limit() -> int | None:
    """The most bytes one file of this process may hold (its RLIMIT_FSIZE); None where there is no limit."""
    soft, _hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    return None if soft == resource.RLIM_INFINITY else soft


def save(path: Path, values: Sequence[Any], part_bytes: int | None = None, workers: int = 1) -> None:
    """Write `values` to `path`, cut into parts of at most `part_bytes` (default: this process's file-size
    limit) where they would not fit one file. With `workers` over one, a file of host tensors only that is larger
    than WRITE_PART_BYTES is written as parts of at most that size, that many at once."""
    tensors: list[torch.Tensor] = []
    header = [_describe(v, tensors) for v in values]
    raw = json.dumps(header).encode()
    total = 8 + len(raw) + sum(_nbytes(t) for t in tensors)
    limit = part_bytes or part_limit()
    if workers > 1 and total > WRITE_PART_BYTES and all(t.device.type == "cpu" for t in tensors):
        stream = [torch.frombuffer(bytearray(struct.pack("<Q", len(raw)) + raw), dtype=torch.uint8), *tensors]
        _save_parts_at_once(path, stream, min(limit or WRITE_PART_BYTES, WRITE_PART_BYTES), total, workers)
        return
    with _PartWriter(path, limit, total) as f:
        f.write(struct.pack("<Q", len(raw)))
        f.write(raw)
        for tensor in tensors:
            for chunk in _chunks(tensor) if tensor.device.type == "cpu" else staging.device_chunks(tensor):
                f.write(chunk)


def _save_parts_at_once(path: Path, stream: list[torch.Tensor], part_bytes: int, total: int, workers: int) -> None:
    """The bytes of `stream`'s contiguous host tensors, one after another, as parts of `part_bytes`, `workers`
    parts written at once."""
    parts = -(-total // part_bytes)
    if parts > MAX_PARTS:
        raise TensorFileError(f"{total} bytes need {parts} parts of {part_bytes}; at most {MAX_PARTS} are written")
    starts = [sum(_nbytes(t) for t in stream[:k]) for k in range(len(stream))]

    def write_part(index: int) -> None:
        begin, end = index * part_bytes, min(total, (index + 1) * part_bytes)
        with os.fdopen(_create_fresh(part_path(path, index)), "wb", buffering=0) as f:
            for start, tensor in zip(starts, stream, strict=True):
                low, high = max(begin, start), min(end, start + _nbytes(tensor))
                for offset in range(low - start, high - start, _CHUNK_BYTES):
                    size = min(_CHUNK_BYTES, high - start - offset)
                    _write_all(f, staging.byte_view(tensor.data_ptr() + offset, size))

    with ThreadPoolExecutor(min(workers, parts), thread_name_prefix="tensorfile-write") as pool:
        list(pool.map(write_part, range(parts)))
    _remove_parts(path, parts)  # parts left from a larger earlier file


def _write_all(f: FileIO, view: memoryview) -> None:
    while len(view):
        view = view[f.write(view):]


def save_to_memory(buffer: memoryview, values: Sequence[Any], through: torch.device | None = None) -> int | None:
    """Write `values` into `buffer` as save() writes a file, a GPU tensor copied straight from its device (a
    DMA copy where the buffer is registered with CUDA: shared_region.py); the bytes used, or None where they
    would not fit (the buffer is then left as it was). `through`: a GPU, given where the buffer is registered with
    CUDA, through which large tensors in pinned host memory are copied (staging.copy_through_device)."""
    raw, tensors, total = _in_memory(values)
    if total > len(buffer):
        return None
    buffer[:8] = struct.pack("<Q", len(raw))
    buffer[8:8 + len(raw)] = raw
    offset = 8 + len(raw)
    for tensor in tensors:
        if tensor.numel():
            _copy_into(_bytes_at(buffer, offset, _nbytes(tensor)), staging.flat_bytes(tensor), through)
        offset += _nbytes(tensor)
    return total


def _copy_into(dst: torch.Tensor, src: torch.Tensor, through: torch.device | None) -> None:
    """dst <- src: through the device where save_to_memory() was given one and `src` is large pinned host memory,
    else by torch's copy."""
    if (through is not None and src.device.type == "cpu" and src.numel() >= staging.THROUGH_DEVICE_MIN_BYTES
            and src.is_pinned() and staging.copy_through_device(dst, src, through)):
        return
    dst.copy_(src)


def _contiguous(tensor: torch.Tensor) -> torch.Tensor:
    return tensor.contiguous()


def memory_size(values: Sequence[Any]) -> int:
    """The bytes save_to_memory() writes for `values` (no tensor copied to find out)."""
    return _in_memory(values, lambda tensor: tensor)[2]


def _in_memory(values: Sequence[Any], contiguous: Callable[[torch.Tensor], torch.Tensor] = _contiguous
               ) -> tuple[bytes, list[torch.Tensor], int]:
    """The header save_to_memory() writes for `values`, the tensors it copies after it, and the bytes in all."""
    tensors: list[torch.Tensor] = []
    header = [_describe(v, tensors, contiguous) for v in values]
    raw = json.dumps(header).encode()
    return raw, tensors, 8 + len(raw) + sum(_nbytes(t) for t in tensors)


def load_from_memory(buffer: memoryview, device: torch.device | None = None,
                     max_bytes: int | None = None) -> list[Any]:
    """What save_to_memory() wrote into `buffer`, read as load() reads a file: the header is copied before it is
    parsed, and every tensor is copied out (to `device` straight from the buffer), so a writer that changes the
    buffer meanwhile changes only the values read."""
    if max_bytes is not None and len(buffer) > max_bytes:
        raise TensorFileError(f"the outputs take {len(buffer)} bytes, more than the {max_bytes} expected")
    source = _MemorySource(buffer)
    return _load(source, len(buffer), device, lambda remaining: _MemoryReader(source, remaining))


def size(path: Path) -> int:
    """The bytes of the file at `path` with all its parts."""
    return sum(_part_sizes(path))


def link(path: Path, target: Path) -> None:
    """The file at `path`, with its parts, also under the name `target`: hard links where both are on one file
    system, else copies."""
    for index in range(len(_part_sizes(path))):
        source, linked = part_path(path, index), part_path(target, index)
        try:
            os.link(source, linked)
        except OSError:
            shutil.copyfile(source, linked)


def remove(path: Path) -> None:
    """Delete the file at `path` and its parts, once read: large outputs should not sit on the disk."""
    path.unlink(missing_ok=True)
    _remove_parts(path, 1)


def _remove_parts(path: Path, first: int) -> None:
    """Delete the consecutive parts of `path` from part `first` on, up to the first that is not there."""
    for index in range(first, MAX_PARTS):
        try:
            os.unlink(part_path(path, index))
        except FileNotFoundError:
            return


def _nbytes(tensor: torch.Tensor) -> int:
    return tensor.numel() * tensor.element_size()


class _PartWriter:
    """One byte stream written as consecutive parts of at most `part_bytes` each."""

    def __init__(self, path: Path, part_bytes: int | None, total: int) -> None:
        self.path, self.part_bytes = path, part_bytes
        parts = 1 if part_bytes is None else max(1, -(-total // part_bytes))
        if parts > MAX_PARTS:
            raise TensorFileError(f"{total} bytes need {parts} parts of {part_bytes}; at most {MAX_PARTS} are read")
        self.index, self.used = 0, 0
        self.f = os.fdopen(_create_fresh(path), "wb")

    def __enter__(self) -> _PartWriter:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.f.close()
        # Parts left from a larger earlier file would otherwise stay on the disk until the job ends.
        _remove_parts(self.path, self.index + 1)

    def write(self, data: bytes | memoryview) -> None:
        view = memoryview(data).cast("B")
        while len(view):
            if self.part_bytes is not None and self.used == self.part_bytes:
                self._next_part()
            room = len(view) if self.part_bytes is None else min(len(view), self.part_bytes - self.used)
            self.f.write(view[:room])
            self.used += room
            view = view[room:]

    def _next_part(self) -> None:
        self.f.close()
        self.index, self.used = self.index + 1, 0
        self.f = os.fdopen(_create_fresh(part_path(self.path, self.index)), "wb")


def _chunks(tensor: torch.Tensor) -> Iterator[memoryview]:
    """The tensor's bytes without copying them, in pieces: a single view or copy of a tensor of 2 GiB or
    more overflows the C int some of these paths use, and a copy would double the judge's memory."""
    address, total = tensor.data_ptr(), tensor.numel() * tensor.element_size()
    for offset in range(0, total, _CHUNK_BYTES):
        size = min(_CHUNK_BYTES, total - offset)
        yield staging.byte_view(address + offset, size)


def _bytes_at(buffer: memoryview, offset: int, size: int) -> torch.Tensor:
    """`size` bytes of `buffer` from `offset`, as a tensor sharing their memory."""
    return torch.frombuffer(buffer[offset:offset + size], dtype=torch.uint8)


def _describe(value: Any, tensors: list[torch.Tensor],
              prepare: Callable[[torch.Tensor], torch.Tensor] | None = None) -> dict[str, Any]:
    if isinstance(value, torch.Tensor):
        if value.dtype not in _NAMES:
            raise TensorFileError(f"unsupported dtype {value.dtype}")
        data = (prepare or _to_write)(value.detach())
        tensors.append(data)
        nbytes = data.numel() * data.element_size()
        return {"t": "tensor", "dtype": _NAMES[value.dtype], "shape": list(data.shape), "nbytes": nbytes}
    if isinstance(value, tuple):
        return {"t": "tuple", "items": [_describe(v, tensors, prepare) for v in value]}
    if isinstance(value, list):
        return {"t": "list", "items": [_describe(v, tensors, prepare) for v in value]}
    if value is None or isinstance(value, bool | int | float | str):
        return {"t": "json", "value": value}
    raise TensorFileError(f"cannot store a value of type {type(value).__name__}")


def _through_pinned(device: torch.device | None, nbytes: int) -> bool:
    return device is not None and device.type == "cuda" and nbytes <= PINNED_MAX_BYTES


def _staged(device: torch.device, nbytes: int) -> bool:
    """A GPU tensor too large for one pinned copy: it crosses in pieces (staging.py)."""
    return device.type == "cuda" and nbytes > PINNED_MAX_BYTES


def _to_write(tensor: torch.Tensor) -> torch.Tensor:
    """The tensor as save() writes it: on the host, or a large GPU one contiguous on its device (staging.py)."""
    if _staged(tensor.device, _nbytes(tensor)):
        return tensor.contiguous()
    if not _through_pinned(tensor.device, _nbytes(tensor)):
        return tensor.to("cpu").contiguous()
    host = torch.empty(tensor.shape, dtype=tensor.dtype, pin_memory=True)
    host.copy_(tensor)
    return host


def _create_fresh(path: Path) -> int:
    """A new regular file at `path`, never following a link: the directory may be a child's, and a child
    that plants a symlink there must not make the judge write through it (O_EXCL never follows links)."""
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)
    return os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)


def _open_regular(path: Path) -> BufferedReader:
    """A regular file opened for reading, refusing links, FIFOs and devices a child may have put there."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    f = os.fdopen(fd, "rb")
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        f.close()
        raise TensorFileError(f"{path.name} is not a regular file")
    return f


def load(path: Path, device: torch.device | None = None, max_bytes: int | None = None) -> list[Any]:
    """Tensors are read straight into their own memory: no copy of the file is held besides them. With a
    `device`, the top-level tensors are moved there (through pinned memory to a GPU), as to_device() would.
    With `max_bytes`, parts larger than that in all are refused before anything is read: what the reader
    allocates is otherwise bounded only by the parts' total size."""
    try:
        with _PartReader(path) as f:
            if max_bytes is not None and f.total > max_bytes:
                raise TensorFileError(f"{path.name} and its parts hold {f.total} bytes, more than the {max_bytes}"
                                      " expected")
            return _load(f, f.total, device, lambda remaining: _Reader(f, remaining))
    except OSError as exc:
        raise TensorFileError(f"cannot read {path.name}: {exc.strerror}") from exc


class _PartReader:
    """The parts of one tensor file read as one stream. `total` is the size of every part there, taken before
    reading (never through a link): it bounds what a header can make the judge allocate."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.sizes = _part_sizes(path)
        self.total = sum(self.sizes)
        self.index = 0
        self.f: BufferedReader = _open_regular(path)
        self._at: dict[int, BufferedReader] = {}  # each part opened again for read_at
        self._opening = threading.Lock()

    def __enter__(self) -> _PartReader:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.f.close()
        for f in self._at.values():
            f.close()

    def position(self) -> int:
        """Where the stream stands: the bytes read (or skipped) so far, over all parts."""
        return sum(self.sizes[:self.index]) + self.f.tell()

    def skip(self, nbytes: int) -> None:
        """Moves the stream on by `nbytes` (ones read_at read meanwhile)."""
        target = self.position() + nbytes
        while self.index + 1 < len(self.sizes) and target >= sum(self.sizes[:self.index + 1]):
            self._next_part()
        self.f.seek(target - sum(self.sizes[:self.index]))

    def read_at(self, buffer: memoryview, position: int) -> int:
        """Fill what it can of `buffer` from `position` of the stream on, across parts; fewer bytes only where
        the parts end. Safe from several threads at once, and leaves the stream where it stands."""
        done = 0
        while done < len(buffer):
            index, offset = self._part_at(position + done)
            if index is None:
                break
            wanted = min(len(buffer) - done, self.sizes[index] - offset)
            got = os.preadv(self._opened(index).fileno(), [buffer[done:done + wanted]], offset)
            if got <= 0:
                break
            done += got
        return done

    def _part_at(self, position: int) -> tuple[int | None, int]:
        """The part holding byte `position` of the stream, by the sizes taken at the start, and where in it."""
        for index, size in enumerate(self.sizes):
            if position < size:
                return index, position
            position -= size
        return None, 0

    def _opened(self, index: int) -> BufferedReader:
        with self._opening:
            if index not in self._at:
                self._at[index] = _open_regular(part_path(self.path, index))
            return self._at[index]

    def read(self, size: int) -> bytes:
        data = bytearray(size)
        return bytes(data[:self.readinto(memoryview(data))])

    def readinto(self, buffer: memoryview) -> int:
        """Fill `buffer` from this part and the next ones; fewer bytes only where the parts end."""
        done = 0
        while done < len(buffer):
            got = self.f.readinto(buffer[done:])
            if got:
                done += got
            elif not self._next_part():
                break
        return done

    def _next_part(self) -> bool:
        if self.index + 1 >= len(self.sizes):
            return False
        self.f.close()
        self.index += 1
        self.f = _open_regular(part_path(self.path, self.index))
        return True


def _part_sizes(path: Path) -> list[int]:
    """The sizes of `path` and of its consecutive parts; a part that is not a regular file is refused."""
    sizes: list[int] = []
    for index in range(MAX_PARTS):
        try:
            info = os.stat(part_path(path, index), follow_symlinks=False)
        except FileNotFoundError:
            if index == 0:
                raise
            break
        if not stat.S_ISREG(info.st_mode):
            raise TensorFileError(f"{part_path(path, index).name} is not a regular file")
        sizes.append(info.st_size)
    return sizes


class _MemorySource:
    """A buffer read as a stream, like a file's parts."""

    def __init__(self, buffer: memoryview) -> None:
        self.buffer, self.offset = buffer, 0

    def read(self, size: int) -> bytes:
        data = bytes(self.buffer[self.offset:self.offset + size])
        self.offset += len(data)
        return data

    def take(self, size: int) -> int:
        """Skip `size` bytes; where they start."""
        start, self.offset = self.offset, self.offset + size
        return start


class _Stream(Protocol):
    def read(self, size: int) -> bytes: ...


class _TensorReader(Protocol):
    def tensor(self, shape: list[int], dtype: torch.dtype, nbytes: int,
               device: torch.device | None) -> torch.Tensor: ...


def _load(f: _Stream, file_size: int, device: torch.device | None,
          reader: Callable[[int], _TensorReader]) -> list[Any]:
    """The values of a stream of `file_size` bytes whose tensors `reader` (given the bytes left after the
    header) reads."""
    if file_size < 8:
        raise TensorFileError("file too short")
    (size,) = struct.unpack("<Q", _read_exactly(f, 8))
    if size > MAX_HEADER_BYTES or 8 + size > file_size:
        raise TensorFileError("bad header length")
    raw = _read_exactly(f, size)
    tensors = reader(file_size - 8 - size)
    try:
        header = json.loads(raw)
        if not isinstance(header, list):
            raise TensorFileError("header is not a list")
        return [_rebuild(item, tensors, device) for item in header]
    except (ValueError, RecursionError) as exc:  # not JSON, or nested past what Python's stack allows
        raise TensorFileError(f"malformed header: {type(exc).__name__}") from None


def _read_exactly(f: _Stream, size: int) -> bytes:
    data = f.read(size)
    if len(data) != size:
        raise TensorFileError("file too short")
    return data


class _Reader:
    """Tensor bytes in file order; `remaining` bounds what a header may make the judge allocate."""

    def __init__(self, f: _PartReader, remaining: int) -> None:
        self.f = f
        self.remaining = remaining

    def tensor(self, shape: list[int], dtype: torch.dtype, nbytes: int, device: torch.device | None) -> torch.Tensor:
        if nbytes > self.remaining:
            raise TensorFileError("tensor size does not match its header")
        self.remaining -= nbytes
        if device is not None and _staged(device, nbytes):
            staged = staging.read_to_device(shape, dtype, device, self.f.read_at, self.f.position())
            if staged is None:
                raise TensorFileError("file too short")
            self.f.skip(nbytes)
            return staged
        tensor = torch.empty(shape, dtype=dtype, pin_memory=_through_pinned(device, nbytes))
        for chunk in _chunks(tensor):
            if self.f.readinto(chunk) != len(chunk):
                raise TensorFileError("file too short")
        return tensor if device is None else tensor.to(device)


class _MemoryReader:
    """Tensor bytes in a buffer (load_from_memory), each copied straight to its tensor's device; `remaining`
    as _Reader's."""

    def __init__(self, source: _MemorySource, remaining: int) -> None:
        self.source, self.remaining = source, remaining

    def tensor(self, shape: list[int], dtype: torch.dtype, nbytes: int, device: torch.device | None) -> torch.Tensor:
        if nbytes > self.remaining:
            raise TensorFileError("tensor size does not match its header")
        self.remaining -= nbytes
        tensor = torch.empty(shape, dtype=dtype, device=device)
        start = self.source.take(nbytes)
        if nbytes:
            staging.flat_bytes(tensor).copy_(_bytes_at(self.source.buffer, start, nbytes))
        return tensor


def _rebuild(item: Any, reader: _TensorReader, device: torch.device | None = None) -> Any:
    if not isinstance(item, dict):
        raise TensorFileError("malformed header entry")
    kind = item.get("t")
    if kind == "json":
        return item.get("value")
    if kind in ("list", "tuple"):
        items = [_rebuild(i, reader) for i in item.get("items", [])]
        return tuple(items) if kind == "tuple" else items
    if kind == "tensor":
        return _tensor(item, reader, device)
    raise TensorFileError(f"unknown entry kind {kind!r}")


def _tensor(item: dict[str, Any], reader: _TensorReader, device: torch.device | None) -> torch.Tensor:
    dtype = _DTYPES.get(str(item.get("dtype")))
    shape = item.get("shape")
    nbytes = item.get("nbytes")
    if dtype is None or not isinstance(shape, list) or not isinstance(nbytes, int):
        raise TensorFileError("malformed tensor entry")
    if not all(isinstance(d, int) and d >= 0 for d in shape):
        raise TensorFileError("malformed shape")
    numel = 1
    for d in shape:
        numel *= d
    itemsize = torch.empty((), dtype=dtype).element_size()
    if numel * itemsize != nbytes:
        raise TensorFileError("tensor size does not match its header")
    return reader.tensor(shape, dtype, nbytes, device)
