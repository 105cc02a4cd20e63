"""A load_inline call's CUDA sources built first without `#include <torch/extension.h>` (or <torch/torch.h>),
and as given where that build fails.

nvcc parses a .cu file's includes three times (cudafe++, cicc, then g++ on the host half), and
torch/extension.h (all of libtorch's C++ API, pybind11 and Python.h) is most of that. On an H100 host, a
KernelBench-style cuda.cu took 60 s of nvcc with it and 26-29 s without. load_inline itself writes
`#include <torch/types.h>` (ATen, torch::Tensor, the factories) above every CUDA source, which is what a
kernel file's host wrapper uses, and the Python bindings live in main.cpp, which keeps the full header.

So the compile child builds such a call with that include line blanked (the line numbers stay) under a name of
its own, `<name>_lean`. If that build fails for any reason, it builds the call exactly as the submission made
it, and that build's outcome, errors and all, is the one reported. Fewer declarations can only make the file
fail to compile, or, in contrived code, pick another overload among those left; the kernels and their
wrappers are the same text. A source that mentions pybind11 needs the full header, so it is built as given
at once.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable
from typing import Any

from kernelgrade.evaluator.child.inline_call import wrapping

LEAN_SUFFIX = "_lean"
# torch/torch.h is libtorch's whole C++ API too, and includes torch/extension.h under load_inline's flags.
EXTENSION_INCLUDE = re.compile(r"^[ \t]*#[ \t]*include[ \t]*[<\"]torch/(extension|torch)\.h[>\"][ \t]*$", re.MULTILINE)
NEEDS_PYTHON = re.compile(r"pybind11|PYBIND11|\bpy::")
# What the build log says of a call, for readers of the log (the benchmarks) to find.
KEPT = "CUDA sources built lean"
FELL_BACK = "the lean build of its CUDA sources failed"


def lean_sources(cuda_sources: Any) -> list[str] | None:
    """The CUDA sources with torch/extension.h's include blanked, or None where the call gets no lean build:
    no CUDA sources, none that includes the header, one that uses pybind11, or sources that are not text."""
    sources = [cuda_sources] if isinstance(cuda_sources, str) else cuda_sources
    if not isinstance(sources, (list, tuple)) or not sources or not all(isinstance(s, str) for s in sources):
        return None
    if any(NEEDS_PYTHON.search(s) for s in sources) or not any(EXTENSION_INCLUDE.search(s) for s in sources):
        return None
    return [EXTENSION_INCLUDE.sub("", s) for s in sources]


def with_lean_header(original: Callable[..., Any], note: Callable[[str], None]) -> Callable[..., Any]:
    """load_inline that tries a lean build first; `note` gets one line per call saying which build it kept."""
    def handle(bound: inspect.BoundArguments) -> Any:
        lean = lean_sources(bound.arguments.get("cuda_sources"))
        name = bound.arguments.get("name")
        if lean is None or not isinstance(name, str):
            return original(*bound.args, **bound.kwargs)
        trial = bound.signature.bind(*bound.args, **bound.kwargs)
        # load_inline extends the lists it is given (the sources, the flags): a fallback needs them untouched.
        trial.arguments.update({k: list(v) for k, v in trial.arguments.items() if isinstance(v, list)})
        trial.arguments.update(cuda_sources=lean, name=name + LEAN_SUFFIX)
        try:
            built = original(*trial.args, **trial.kwargs)
        except Exception as exc:  # any failure of the lean build means: build it as given
            note(f"kernelgrade: {name}: {FELL_BACK} ({type(exc).__name__}); building it as given")
            return original(*bound.args, **bound.kwargs)
        note(f"kernelgrade: {name}: {KEPT}, without their torch/extension.h or torch/torch.h include"
             f" (load_inline's torch/types.h stays), as {name}{LEAN_SUFFIX}")
        return built

    return wrapping(original, handle)
