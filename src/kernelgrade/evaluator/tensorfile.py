"""A tensor file format the judge can read from an untrusted child without unpickling anything.

Layout: 8-byte little-endian header length, a JSON header, then the raw bytes of each tensor.
The header describes a (possibly nested) list of values: tensors, and JSON scalars, lists and tuples.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import stat
import struct
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch

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


class TensorFileError(Exception):
    pass


def dtype_name(dtype: torch.dtype) -> str:
    return _NAMES.get(dtype, str(dtype))


def save(path: Path, values: Sequence[Any]) -> None:
    blobs: list[bytes] = []
    header = [_describe(v, blobs) for v in values]
    raw = json.dumps(header).encode()
    with os.fdopen(_create_fresh(path), "wb") as f:
        f.write(struct.pack("<Q", len(raw)))
        f.write(raw)
        for blob in blobs:
            f.write(blob)


def _describe(value: Any, blobs: list[bytes]) -> dict[str, Any]:
    if isinstance(value, torch.Tensor):
        if value.dtype not in _NAMES:
            raise TensorFileError(f"unsupported dtype {value.dtype}")
        data = value.detach().to("cpu").contiguous()
        blob = ctypes.string_at(data.data_ptr(), data.numel() * data.element_size()) if data.numel() else b""
        blobs.append(blob)
        return {"t": "tensor", "dtype": _NAMES[value.dtype], "shape": list(data.shape), "nbytes": len(blob)}
    if isinstance(value, tuple):
        return {"t": "tuple", "items": [_describe(v, blobs) for v in value]}
    if isinstance(value, list):
        return {"t": "list", "items": [_describe(v, blobs) for v in value]}
    if value is None or isinstance(value, bool | int | float | str):
        return {"t": "json", "value": value}
    raise TensorFileError(f"cannot store a value of type {type(value).__name__}")


def _create_fresh(path: Path) -> int:
    """A new regular file at `path`, never following a link: the directory may be a child's, and a child
    that plants a symlink there must not make the judge write through it (O_EXCL never follows links)."""
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)
    return os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)


def _read_regular(path: Path) -> bytes:
    """The bytes of a regular file, refusing links, FIFOs and devices a child may have put there."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise TensorFileError(f"{path.name} is not a regular file")
        return f.read()


def load(path: Path) -> list[Any]:
    try:
        data = _read_regular(path)
    except OSError as exc:
        raise TensorFileError(f"cannot read {path.name}: {exc.strerror}") from exc
    if len(data) < 8:
        raise TensorFileError("file too short")
    (size,) = struct.unpack("<Q", data[:8])
    if size > MAX_HEADER_BYTES or 8 + size > len(data):
        raise TensorFileError("bad header length")
    header = json.loads(data[8 : 8 + size])
    if not isinstance(header, list):
        raise TensorFileError("header is not a list")
    cursor = [8 + size]
    return [_rebuild(item, data, cursor) for item in header]


def _rebuild(item: Any, data: bytes, cursor: list[int]) -> Any:
    if not isinstance(item, dict):
        raise TensorFileError("malformed header entry")
    kind = item.get("t")
    if kind == "json":
        return item.get("value")
    if kind in ("list", "tuple"):
        items = [_rebuild(i, data, cursor) for i in item.get("items", [])]
        return tuple(items) if kind == "tuple" else items
    if kind == "tensor":
        return _tensor(item, data, cursor)
    raise TensorFileError(f"unknown entry kind {kind!r}")


def _tensor(item: dict[str, Any], data: bytes, cursor: list[int]) -> torch.Tensor:
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
    if numel * itemsize != nbytes or cursor[0] + nbytes > len(data):
        raise TensorFileError("tensor size does not match its header")
    start = cursor[0]
    cursor[0] += nbytes
    if nbytes == 0:
        return torch.empty(shape, dtype=dtype)
    flat = torch.frombuffer(bytearray(data[start : start + nbytes]), dtype=torch.uint8)
    return flat.view(dtype).reshape(shape)
