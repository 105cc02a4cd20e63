"""Identity checks on what the run child's harness relies on (docs/threats.md 3, 4, 14, 18).

The submission runs in the harness's process and can rebind any name it can reach: the clocks, CUDA events
and synchronize, torch and tensor methods, builtins, the harness's own module globals, even a function's
`__code__`. The guard records, before the submission is imported, the objects behind every such name; a
later check lists what was rebound. Reported functions are flagged by the judge.

This cannot stop code that edits memory through ctypes; the judge's own clock around the timed phase and
its own output checks are the backstop for that.
"""

from __future__ import annotations

import builtins
import json
import os
import struct
import sys
import threading
import time
import types
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import torch

# Whole modules whose callables the harness, or torch underneath it, calls after the submission is loaded.
MODULES: tuple[types.ModuleType, ...] = (time, builtins, json, struct, threading, os, sys, torch._C, torch.cuda,
                                         torch.autograd, torch.overrides)
# Top-level torch functions the harness uses; the rest of `torch` is left out because torch itself rebinds
# some of it lazily (torch.compile's first use wraps torch.manual_seed, for one).
TORCH_FUNCTIONS = ("equal", "empty", "empty_like", "frombuffer", "trunc", "isfinite", "get_float32_matmul_precision",
                   "set_float32_matmul_precision", "get_default_dtype", "set_grad_enabled", "is_grad_enabled",
                   "device", "Tensor", "no_grad", "manual_seed")
# Names torch itself rebinds when a submission uses it honestly (seen with torch.compile).
HONEST_REBINDS = frozenset({"torch.manual_seed"})
# Classes whose attributes (their own and their Python bases') the harness calls through. Not nn.Module:
# torch.compile rebinds its __init__, and a submission changing it changes only its own model.
CLASSES: tuple[type, ...] = (torch.Tensor, torch.cuda.Event, torch.cuda.Stream)
HARNESS_PACKAGE = "kernelgrade"
# Rebinding any of these changes the numbers the harness reads as times.
CLOCK_PREFIXES = ("time.", "torch.cuda.synchronize", "torch.cuda.Event", "torch.cuda.Stream",
                  "torch.cuda.streams.", "torch.cuda.current_stream", "torch.cuda.default_stream",
                  "torch._C._cuda_synchronize", "torch._C._CudaEventBase", "torch._utils._CudaEventBase",
                  "torch._utils._CudaStreamBase", "kernelgrade.evaluator.timing")
# Py_TPFLAGS_IMMUTABLETYPE: set on static (C) types, whose attributes cannot be assigned.
IMMUTABLE_TYPE_FLAG = 1 << 8
_MISSING = object()


@dataclass(frozen=True)
class Watched:
    label: str
    namespace: dict[str, Any]  # the module's or class's own __dict__ (read live at check time)
    name: str
    value: Any
    code: Any  # the function's __code__ when it is a Python function
    defaults: Any


class Guard:
    def __init__(self, entries: list[Watched], class_keys: dict[str, tuple[dict[str, Any], frozenset[str]]]) -> None:
        self._entries = entries
        self._class_keys = class_keys

    @classmethod
    def take(cls) -> Guard:
        """Snapshot now; call before the submission is imported."""
        entries = list(_all_entries())
        class_keys = {_label(c): (_namespace(c), frozenset(_namespace(c))) for c in _watched_classes()}
        return cls(entries, class_keys)

    def rebound(self) -> list[str]:
        """Labels of watched names whose object (or code, or defaults) changed since the snapshot."""
        changed = [e.label for e in self._entries if _changed(e) and e.label not in HONEST_REBINDS]
        for label, (namespace, keys) in self._class_keys.items():
            changed.extend(f"{label}.{k} (added)" for k in sorted(set(namespace) - keys) if not k.startswith("_abc"))
        return changed

    def __len__(self) -> int:
        return len(self._entries)


def is_clock(label: str) -> bool:
    return label.startswith(CLOCK_PREFIXES)


def _changed(entry: Watched) -> bool:
    current = entry.namespace.get(entry.name, _MISSING)
    if current is not entry.value:
        return True
    return entry.code is not None and (getattr(current, "__code__", None) is not entry.code
                                       or getattr(current, "__defaults__", None) is not entry.defaults)


def _namespace(owner: Any) -> dict[str, Any]:
    # A module's __dict__ is the live dict itself; a class's is a read-only live view of it.
    return owner.__dict__  # type: ignore[no-any-return]


def _label(owner: Any) -> str:
    if isinstance(owner, types.ModuleType):
        # The run child runs as __main__; its spec keeps the real name.
        return str(getattr(owner.__spec__, "name", None) or owner.__name__)
    return f"{owner.__module__}.{owner.__qualname__}"


def _entry(owner: Any, label: str, name: str, value: Any) -> Watched:
    code = getattr(value, "__code__", None) if isinstance(value, types.FunctionType) else None
    defaults = getattr(value, "__defaults__", None) if code is not None else None
    return Watched(f"{label}.{name}", _namespace(owner), name, value, code, defaults)


def _all_entries() -> Iterator[Watched]:
    for module in (*MODULES, *_harness_modules()):
        label = _label(module)
        for name, value in list(vars(module).items()):
            if callable(value):
                yield _entry(module, label, name, value)
    for name in TORCH_FUNCTIONS:
        yield _entry(torch, "torch", name, getattr(torch, name))
    for owner in _watched_classes():
        for name, value in list(vars(owner).items()):
            if not name.startswith("_abc") and name not in {"__dict__", "__weakref__"}:
                yield _entry(owner, _label(owner), name, value)


def _harness_modules() -> list[types.ModuleType]:
    modules = [m for n, m in list(sys.modules.items()) if n.startswith(HARNESS_PACKAGE) and m is not None]
    main = sys.modules.get("__main__")
    if main is not None and getattr(main.__spec__, "name", "").startswith(HARNESS_PACKAGE):
        modules.append(main)
    return modules


def _watched_classes() -> list[type]:
    classes: list[type] = []
    for cls in CLASSES:
        classes.extend(c for c in cls.__mro__ if c is not object and c not in classes and _mutable(c))
    for module in _harness_modules():
        classes.extend(v for v in vars(module).values()
                       if isinstance(v, type) and v.__module__ == module.__name__ and v not in classes)
    return classes


def _mutable(cls: type) -> bool:
    """Extension types defined in C cannot be rebound; only their Python subclasses need watching."""
    return not cls.__flags__ & IMMUTABLE_TYPE_FLAG
