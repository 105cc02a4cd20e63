"""What the harness asks of a tensor before believing it (docs/threats.md 3, 5, 11): is it a real dense tensor
with its own memory, and what are its bits right now.

Fingerprints sum the raw bit patterns as integers, so NaN payloads, signed zeros and every changed bit
count, the sum is exact and the same on any device, and it can be compared for equality (a float sum of a
NaN-holding output never equals itself).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from typing import Any

import torch

_Tensor = torch.Tensor
_strided = torch.strided
# Dispatch keys that make a plain-typed tensor behave like a wrapper (functionalization, functorch
# transforms, Python dispatch): its data is not simply the bits in its storage.
_WRAPPER_KEYS = ("Python", "Functionalize", "FuncTorch", "Batched", "Lazy", "Meta")
# Words summed at a time. A sum with dtype=int64 first makes an int64 copy of what it sums: a whole 6 GiB output
# took 12 GiB more of the device, in the judge and in the run child alike, and ran an 80 GB card out of memory.
# A chunk's copy is 512 MiB at most.
FINGERPRINT_CHUNK = 1 << 26


@contextlib.contextmanager
def inert() -> Iterator[None]:
    """Run the harness's own tensor operations with every torch-function and dispatch mode and subclass
    hook switched off, so that a mode the submission installed cannot answer them."""
    with torch._C.DisableTorchFunction(), torch._C._DisableTorchDispatch():
        yield


def active_modes() -> list[str]:
    """Torch-function and dispatch modes in force: a submission that leaves one installed can intercept
    every operation the harness performs, lazily computing outputs when they are inspected."""
    found = []
    if torch._C._len_torch_function_stack() > 0:
        found.append(f"{torch._C._len_torch_function_stack()} torch-function mode(s)")
    if torch._C._len_torch_dispatch_stack() > 0:
        found.append(f"{torch._C._len_torch_dispatch_stack()} torch-dispatch mode(s)")
    return found


def why_not_plain(value: Any) -> str:
    """Empty for a dense tensor that owns real memory; otherwise what it is instead."""
    if type(value) is not _Tensor:
        return f"a {type(value).__module__}.{type(value).__qualname__}"
    with inert():
        return _tensor_problem(value)


def _tensor_problem(value: torch.Tensor) -> str:
    if value.layout is not _strided or value.is_nested:
        return f"a tensor with layout {value.layout}{' (nested)' if value.is_nested else ''}"
    if value.device.type == "meta":
        return "a meta tensor, which has no data"
    if value._is_zerotensor() or value.is_conj() or value.is_neg():
        return "a tensor with a lazy zero, conjugate or negation bit"
    keys = str(torch._C._dispatch_keys(value))
    wrapped = [k for k in _WRAPPER_KEYS if k in keys]
    if wrapped:
        return f"a wrapped tensor (dispatch keys {keys})"
    if value.numel() == 0:
        return ""
    storage = value.untyped_storage()
    if value.data_ptr() == 0 or storage.data_ptr() == 0:
        return "a tensor without memory behind it"
    span = value.storage_offset() + sum((size - 1) * stride for size, stride in zip(value.shape, value.stride(),
                                                                                   strict=True)) + 1
    if any(s < 0 for s in value.stride()) or span * value.element_size() > storage.nbytes():
        return "a tensor whose view reaches outside its storage"
    return ""


def fingerprint(value: Any) -> int:
    """An exact integer summary of a plain tensor's bits (0 for anything else)."""
    if type(value) is not _Tensor or value.numel() == 0:
        return 0
    with inert():
        flat = value.detach().contiguous().reshape(-1).view(torch.uint8)
        words = flat.view(torch.int32) if flat.numel() % 4 == 0 else flat
        if words.numel() <= FINGERPRINT_CHUNK:
            return int(words.sum(dtype=torch.int64))
        # Integer sums wrap the same way whatever the grouping: the same value as one sum of the whole.
        total = torch.zeros((), dtype=torch.int64, device=words.device)
        for start in range(0, words.numel(), FINGERPRINT_CHUNK):
            total += words[start:start + FINGERPRINT_CHUNK].sum(dtype=torch.int64)
        return int(total)


def fingerprints(values: Sequence[Any]) -> list[int]:
    return [fingerprint(v) for v in values]
