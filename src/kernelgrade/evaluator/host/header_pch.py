"""The precompiled torch/extension.h that a compile child's main.cpp may use (child/header_pch.py says which
load_inline calls, by variant: with or without CUDA, and the -O flags).

Built here, by the trusted judge, never by a child: every later build that uses a PCH includes its code, so a
PCH a submission could write would poison other submissions' builds. The compile child sees the PCH directory
read-only. One PCH per key: the compiler (its path and `--version`), torch's version and headers, and the exact
flags g++ compiles main.cpp with for that variant, taken from torch's own build-file writer. It lies at
cache_dir/pch/<key>/torch/extension.h.gch beside a copy of extension.h: a source that includes
<torch/extension.h> again finds it in the PCH's directory and skips it by its `#pragma once`, which GCC
matches by content.

A PCH is built the first time a compile child reports a call that wanted its variant and found none, on a
thread of its own (build_later), so that the compile which found it missing ends as soon as its own build does:
a first submission's verdict does not wait for a header it did not use. A worker pool builds the common variant
as it starts (prepare), before any submission asks. Either holds the host's lock shared, as a build does, so
no CPU measurement runs beside it.
"""

from __future__ import annotations

import fcntl
import functools
import hashlib
import inspect
import json
import os
import shlex
import shutil
import subprocess
import tempfile
import threading
from collections.abc import Iterable
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path

import torch

from kernelgrade.evaluator.host.host_lock import HostLock
from kernelgrade.evaluator.wire.pch_variants import VARIANT_FLAGS, variant_flags

# g++ parses torch/extension.h in about 20 s on one core of a 2-core machine and writes 0.8 GB; five minutes
# means the machine is swamped or the compiler hangs, and the builds go on without a PCH.
PCH_BUILD_S = 300.0
VARIANTS = tuple(f"{kind}-{base}" for kind in ("cpu", "cuda") for base in VARIANT_FLAGS)


@dataclass(frozen=True)
class Recipe:
    compiler: tuple[str, ...]
    flags: tuple[str, ...]  # main.cpp's flags for the variant, less the per-extension name
    key: str


def pch_root(cache_dir: Path) -> Path:
    return cache_dir / "pch"


def header() -> Path:
    return Path(torch.utils.cpp_extension.include_paths()[0]) / "torch" / "extension.h"


def ready_dirs(cache_dir: Path) -> dict[str, str]:
    """variant -> the include dir holding its built PCH, for the variants built so far."""
    ready = {}
    for variant in VARIANTS:
        found = recipe(variant)
        if found is not None and (pch_root(cache_dir) / found.key / "torch" / "extension.h.gch").is_file():
            ready[variant] = str(pch_root(cache_dir) / found.key)
    return ready


# The variant most load_inline calls want: no extra flags, CPU. What a pool builds as it starts.
COMMON_VARIANT = "cpu-plain"


def build_missing(cache_dir: Path, variants: Iterable[object], host_lock: HostLock | None = None) -> None:
    """Build the PCHs of the variants a compile child reported missing (known names only)."""
    for variant in variants:
        if isinstance(variant, str) and variant in VARIANTS:
            with host_lock.shared() if host_lock is not None else nullcontext():
                build(cache_dir, variant)


def build_later(cache_dir: Path, variants: Iterable[object], host_lock: HostLock | None = None) -> threading.Thread:
    """build_missing on a daemon thread (a process that exits mid-build leaves only a scratch dir, which the
    next build of the key replaces); returns the started thread."""
    thread = threading.Thread(target=build_missing, args=(cache_dir, list(variants), host_lock),
                              name="pch-build", daemon=True)
    thread.start()
    return thread


def prepare(cache_dir: Path, host_lock: HostLock | None = None) -> threading.Thread:
    """Start building the common variant's PCH, unless it is there: a pool calls this as it starts."""
    return build_later(cache_dir, [COMMON_VARIANT], host_lock)


def build(cache_dir: Path, variant: str) -> bool:
    """Build the variant's PCH unless it exists or another build of it is under way; True if it is there."""
    found = recipe(variant)
    if found is None:
        return False
    root = pch_root(cache_dir)
    final = root / found.key
    root.mkdir(parents=True, exist_ok=True)
    with open(root / f"{found.key}.lock", "a") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False  # another thread or judge builds it; the next compiles use it
        if not final.exists():
            _build_into(found, root, final)
        return final.exists()


def _build_into(found: Recipe, root: Path, final: Path) -> None:
    scratch = Path(tempfile.mkdtemp(prefix=f".{found.key}.", dir=root))
    try:
        (scratch / "torch").mkdir()
        shutil.copyfile(header(), scratch / "torch" / "extension.h")
        command = [*found.compiler, "-x", "c++-header", str(header()), "-o", str(scratch / "torch" / "extension.h.gch"),
                   *found.flags]
        done = subprocess.run(command, capture_output=True, timeout=PCH_BUILD_S, check=False, cwd=scratch)
        if done.returncode != 0:
            return
        # Readable by the compile children, which run under uids of their own; written by no one after this.
        for path in (scratch, scratch / "torch"):
            path.chmod(0o755)
        for path in (scratch / "torch").iterdir():
            path.chmod(0o444)
        os.rename(scratch, final)
    except (OSError, subprocess.SubprocessError):
        return
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


@functools.cache
def recipe(variant: str) -> Recipe | None:
    """None where no PCH can be made: an unknown variant, a compiler that is not GCC, a torch whose build-file
    writer is not the one read here, or CUDA without a toolkit."""
    parsed = variant_flags(variant)
    if parsed is None:
        return None
    try:
        compiler, flags = torch_main_flags(*parsed)
        version = subprocess.run([*compiler, "--version"], capture_output=True, text=True, timeout=30,
                                 check=True).stdout
    except Exception:
        return None
    if "Free Software Foundation" not in version:  # GCC's banner; clang's PCHs work differently
        return None
    material = {"compiler": [shutil.which(compiler[0]) or compiler[0], *compiler[1:]], "version": version,
                "torch": torch.__version__, "header": str(header()), "flags": flags}
    return Recipe(tuple(compiler), tuple(flags), hashlib.sha256(json.dumps(material).encode()).hexdigest()[:32])


def torch_main_flags(with_cuda: bool, extra_cflags: tuple[str, ...]) -> tuple[list[str], list[str]]:
    """The compiler and flags torch's build file gives main.cpp for such a call, without its
    -DTORCH_EXTENSION_NAME (the headers do not use it, so GCC ignores it when it checks the PCH)."""
    from torch.utils import cpp_extension

    writer = cpp_extension._write_ninja_file_to_build_library
    with tempfile.TemporaryDirectory() as scratch:
        sources = [os.path.join(scratch, "main.cpp")] + ([os.path.join(scratch, "cuda.cu")] if with_cuda else [])
        values = {"path": os.path.join(scratch, "build.ninja"), "name": "kg_pch", "sources": sources,
                  "extra_cflags": list(extra_cflags), "extra_cuda_cflags": [], "extra_sycl_cflags": [],
                  "extra_ldflags": [], "extra_include_paths": [], "with_cuda": with_cuda, "with_sycl": False,
                  "is_standalone": False}
        accepted = inspect.signature(writer).parameters
        writer(**{name: value for name, value in values.items() if name in accepted})
        lines = Path(values["path"]).read_text().splitlines()  # type: ignore[arg-type]
    settings = {name.strip(): value.strip() for name, _, value in (line.partition("=") for line in lines)
                if name.strip() in ("cxx", "cflags", "post_cflags")}
    flags = shlex.split(settings["cflags"]) + shlex.split(settings.get("post_cflags", ""))
    return shlex.split(settings["cxx"]), [f for f in flags if not f.startswith("-DTORCH_EXTENSION_NAME=")]
