"""Which load_inline calls may compile their main.cpp with a precompiled torch/extension.h, and how.

load_inline writes `#include <torch/extension.h>` as main.cpp's first line, and parsing that header is most
of a C++ build (about 15-20 s of g++). The judge builds a precompiled header (PCH) for it once per compiler,
torch and flag set (host/header_pch.py) and shows it to the compile child read-only; a call whose flags are
one of the variants named in wire/pch_variants.py gets `-I<pch dir>` in its extra_cflags, so g++ finds
<dir>/torch/extension.h.gch first. GCC checks the PCH against the compile's macros and options and silently
parses the header instead where it does not match, so a wrong guess costs time, never correctness.

Only main.cpp sees extra_cflags (nvcc gets extra_cuda_cflags), so a CUDA build's cuda.cu is untouched.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from typing import Any

from kernelgrade.evaluator.child.inline_call import wrapping
from kernelgrade.evaluator.wire.pch_variants import variant_name


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
