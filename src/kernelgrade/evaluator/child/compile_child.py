"""The compile child: runs the submission's import (and constructor) so its load_inline builds happen
here, with no GPU, into the cache entry named by TORCH_EXTENSIONS_DIR. Reports which builds failed, and the
precompiled-header variants its calls wanted and did not find (header_pch.py), for the judge to build.

Its builds hold their directories' locks with flock (wire/build_lock.py), so a build killed mid-way leaves a
lock the next build takes over instead of waiting on it; and it exits with CPU_LIMIT_STATUS at its CPU-time
limit, so that the judge can name that limit (compile_protocol.py).

Run as `python -m kernelgrade.evaluator.child.compile_child`; one command in, one reply out.
"""

from __future__ import annotations

import ctypes
import json
import os
import signal
import sys
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from torch.utils import cpp_extension

from kernelgrade.evaluator.child.channel import ChildChannel
from kernelgrade.evaluator.child.header_pch import with_pch
from kernelgrade.evaluator.child.lean_header import with_lean_header
from kernelgrade.evaluator.codec import Codec
from kernelgrade.evaluator.source_module import import_submission
from kernelgrade.evaluator.wire import build_lock, tensorfile
from kernelgrade.evaluator.wire.compile_protocol import BuildRecord, CompileReply, CompileRequest
from kernelgrade.evaluator.wire.prebuilt import Prebuilt, call_digest, library_of


class BuildRecorder:
    """Wraps load/load_inline to record every build and its error, even when the submission catches it.
    A load_inline build is also recorded by the digest of its arguments and its library's place, so the run
    child can import it without building (prebuilt.py)."""

    def __init__(self) -> None:
        self.builds: list[BuildRecord] = []
        self.extensions_dir = Path(os.environ.get("TORCH_EXTENSIONS_DIR", "."))

    def wrap(self, original: Callable[..., Any], inline: bool) -> Callable[..., Any]:
        def recording(*args: Any, **kwargs: Any) -> Any:
            name = str(kwargs.get("name", args[0] if args else "?"))
            # Before the call: load_inline may extend the lists it is given.
            digest = call_digest(args, kwargs)
            try:
                result = original(*args, **kwargs)
            except BaseException as exc:
                self.builds.append(BuildRecord(name, ok=False, error=f"{type(exc).__name__}: {exc}"))
                raise
            self.builds.append(BuildRecord(name, ok=True, prebuilt=self._prebuilt(inline, digest, result)))
            return result

        return recording

    def _prebuilt(self, inline: bool, digest: str, result: Any) -> Prebuilt | None:
        found = library_of(result, self.extensions_dir) if inline else None
        try:
            return None if found is None else Prebuilt(digest, found[0], found[1])
        except ValueError:  # not a place the run child may import from: it builds that call itself
            return None

    def install(self, pch: dict[str, str], missed: set[str], lean: bool) -> None:
        """`pch`: variant name -> the judge's read-only directory holding torch/extension.h.gch for it; `lean`:
        try CUDA sources without torch/extension.h first (lean_header.py). The recording wrapper is outside the
        others, so the digest is of the submission's own arguments."""
        inline = with_pch(cpp_extension.load_inline, pch, missed.add)
        if lean:
            inline = with_lean_header(inline, note_in_log)
        cpp_extension.load_inline = self.wrap(inline, inline=True)
        cpp_extension.load = self.wrap(cpp_extension.load, inline=False)


class HeldBaton:
    """torch's FileBaton (the lock of one extension's build directory) with the lock held by flock. It takes
    FileBaton's arguments; its polling ones go unused, since it waits on the flock itself."""

    def __init__(self, lock_file_path: str, wait_seconds: float = 0.1, warn_after_seconds: float | None = None) -> None:
        self.path = Path(lock_file_path)
        self.fd: int | None = None

    def try_acquire(self) -> bool:
        """Always True, once the lock is ours: waiting for a live owner happens here, so torch never goes to
        its wait(), after which it would import whatever a dead owner left half built."""
        self.fd = build_lock.acquire(self.path)
        return True

    def wait(self) -> None:
        build_lock.release(self.path, build_lock.acquire(self.path))

    def release(self) -> None:
        if self.fd is not None:
            build_lock.release(self.path, self.fd)
            self.fd = None


def exit_at_cpu_limit() -> None:
    """Make SIGXCPU end the process with CPU_LIMIT_STATUS (compile_protocol.py says why a C handler)."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.signal.argtypes = (ctypes.c_int, ctypes.c_void_p)
    libc.signal.restype = ctypes.c_void_p
    libc.signal(signal.SIGXCPU, ctypes.cast(libc._exit, ctypes.c_void_p))


def build(request: CompileRequest) -> CompileReply:
    recorder = BuildRecorder()
    missed: set[str] = set()
    recorder.install(request.pch, missed, lean=request.lean)
    problem_error = ""
    try:
        module = import_submission(request.submission)
        init_inputs = tensorfile.load(request.init_inputs)
        torch.manual_seed(request.seed)
        # Constructing ModelNew triggers builds done in __init__; other failures here (no GPU in this
        # child, say) are left for the run child to report.
        module.ModelNew(*init_inputs)
    except BaseException:
        problem_error = traceback.format_exc(limit=8)
    return CompileReply(tuple(recorder.builds), problem_error, tuple(sorted(missed)))


def note_in_log(line: str) -> None:
    """stderr is the build log the judge keeps with the result (stdout is sent there too)."""
    print(line, file=sys.stderr, flush=True)


def main() -> None:
    exit_at_cpu_limit()
    cpp_extension.FileBaton = HeldBaton  # type: ignore[attr-defined,assignment]
    channel = ChildChannel.from_stdio()
    line = channel.receive()
    if line is not None:
        # A request that does not decode raises here: the child dies with the reason in its log, and the judge
        # reports the compile step as crashed.
        request = Codec().decode(CompileRequest, json.loads(line))
        channel.send(Codec().encode_dataclass(build(request)))


if __name__ == "__main__":
    main()
