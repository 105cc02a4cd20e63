"""Which load_inline calls may compile their main.cpp with a precompiled torch/extension.h, and how.

load_inline writes `#include <torch/extension.h>` as main.cpp's first line, and parsing that header is most
of a C++ build (about 15-20 s of g++). The judge builds a precompiled header (PCH) for it once per compiler,
torch and flag set (judge/header_pch.py) and shows it to the compile child read-only; a call whose flags are
one of the few variants below gets `-I<pch dir>` in its extra_cflags, so g++ finds <dir>/torch/extension.h.gch
first. GCC checks the PCH against the compile's macros and options and silently parses the header instead
where it does not match, so a wrong guess costs time, never correctness.

Only main.cpp sees extra_cflags (nvcc gets extra_cuda_cflags), so a CUDA build's cuda.cu is untouched.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from typing import Any

from kernelgrade.evaluator.child.inline_call import wrapping

# The flag sets a PCH is built for, by name: none (load_inline's own flags) and the -O levels submissions
# ask for most. A PCH is only valid for the optimisation level it was built with (GCC compares __OPTIMIZE__
# and __NO_INLINE__), and each one is about 0.8 GB, so other flags simply build without one.
VARIANT_FLAGS: Mapping[str, tuple[str, ...]] = {"plain": (), "O2": ("-O2",), "O3": ("-O3",)}


def variant_name(flags: tuple[str, ...], with_cuda: bool) -> str | None:
    """`cuda-O3`, `cpu-plain`, ...: with_cuda changes the include dirs the header is compiled with."""
    base = next((name for name, known in VARIANT_FLAGS.items() if known == flags), None)
    return None if base is None else f"{'cuda' if with_cuda else 'cpu'}-{base}"


def variant_flags(variant: str) -> tuple[bool, tuple[str, ...]] | None:
    """The judge's reading of a variant name (which the compile child reports): with_cuda and the flags."""
    kind, _, base = variant.partition("-")
    if kind not in ("cpu", "cuda") or base not in VARIANT_FLAGS:
        return None
    return kind == "cuda", VARIANT_FLAGS[base]


def call_variant(arguments: Mapping[str, Any]) -> str | None:
    """The PCH variant a load_inline call (its bound arguments) can use, or None where it can use none: extra
    include dirs (they could hold another torch/extension.h), no implicit include, torch's own use_pch (it
    writes into torch's directory), or flags outside the variants."""
    if arguments.get("extra_include_paths") or arguments.get("no_implicit_headers") or arguments.get("use_pch"):
        return None
    flags = arguments.get("extra_cflags") or []
    if isinstance(flags, str) or not all(isinstance(f, str) for f in flags):
        return None
    cuda_sources = arguments.get("cuda_sources")
    with_cuda = arguments.get("with_cuda")
    # torch strips each flag, and an empty one adds nothing to the command (KernelBench's seeds pass [""]).
    given = tuple(f.strip() for f in flags if f.strip())
    return variant_name(given, bool(cuda_sources) if with_cuda is None else bool(with_cuda))


def with_pch(original: Callable[..., Any], ready: Mapping[str, str],
             missed: Callable[[str], None]) -> Callable[..., Any]:
    """load_inline that adds `-I<dir>` for a call whose variant has a ready PCH; reports variants without one."""
    def handle(bound: inspect.BoundArguments) -> Any:
        variant = call_variant(bound.arguments)
        if variant is not None and variant not in ready:
            missed(variant)
        elif variant is not None:
            bound.arguments["extra_cflags"] = [*(bound.arguments.get("extra_cflags") or []), f"-I{ready[variant]}"]
        return original(*bound.args, **bound.kwargs)

    return wrapping(original, handle)
