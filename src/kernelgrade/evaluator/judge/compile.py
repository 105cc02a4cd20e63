"""The compile stage: build the submission's extensions in a child with no GPU, cached by content.

A cache entry is a directory named by the hash of (source, torch version, CUDA version, target arch,
device kind, harness version). Its `ext/` is the TORCH_EXTENSIONS_DIR of both the compile child and the
run child, so the run child's load_inline finds the build up to date and only loads it. Successes and
compile errors are cached; timeouts and grader faults are not.

With `target.lean`, the compile child builds CUDA sources without torch/extension.h first and as given where
that fails (child/lean_header.py); either build answers for the source, so the cache key leaves it out.

With `target.pch`, the compile child may compile main.cpp against a precompiled torch/extension.h that this
judge built (header_pch.py), shown to the child read-only; a variant the child wanted and did not find is built
after its compile, for the next ones.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import math
import os
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from kernelgrade.evaluator.host import header_pch
from kernelgrade.evaluator.host.host_lock import HostLock
from kernelgrade.evaluator.judge.compiler_output import first_errors
from kernelgrade.evaluator.result import Failure, Stage
from kernelgrade.evaluator.sandbox.child_env import child_env, package_root, python_argv
from kernelgrade.evaluator.sandbox.child_process import BadReply, ChildGone, ChildProcess, ChildTimeout
from kernelgrade.evaluator.sandbox.launcher import ChildSpec, Launcher, ResourceLimits
from kernelgrade.evaluator.wire.prebuilt import Prebuilt

# Bump when the compile child's behaviour changes, so old cache entries are not trusted.
HARNESS_VERSION = "3"


@dataclass(frozen=True)
class BuildTarget:
    device: str
    arch: str  # e.g. "9.0"; empty on the CPU
    jobs: int
    timeout_s: float
    pch: bool = False  # compile main.cpp against a precompiled torch/extension.h where the call allows it
    lean: bool = False  # build CUDA sources without torch/extension.h first (child/lean_header.py)
    cpus: tuple[int, ...] = ()  # the cores the build runs on, away from measurements (empty: the judge's own)


@dataclass(frozen=True)
class CompileOutcome:
    extensions_dir: Path
    cache_hit: bool
    failure: Failure | None
    log: str
    builds: int
    prebuilt: tuple[Prebuilt, ...] = ()  # what the run child may import without building


def cache_key(source: str, target: BuildTarget) -> str:
    material = {
        "source": source,
        "torch": torch.__version__,
        "cuda": torch.version.cuda or "",
        "arch": target.arch,
        "device": target.device,
        "harness": HARNESS_VERSION,
    }
    return hashlib.sha256(json.dumps(material, sort_keys=True).encode()).hexdigest()


def arch_env(target: BuildTarget) -> dict[str, str]:
    """Build for the local GPU's architecture only; the run child must see the same value so that its
    load_inline regenerates an identical build file and finds the build up to date."""
    return {"TORCH_CUDA_ARCH_LIST": target.arch} if target.arch else {}


def compile_submission(source: str, submission_path: Path, init_inputs_path: Path, seed: int,
                       target: BuildTarget, cache_dir: Path, work_dir: Path, launcher: Launcher,
                       host_lock: HostLock | None = None) -> CompileOutcome:
    """`host_lock`: held shared while building, so that no CPU measurement on the host runs beside the build."""
    entry = cache_dir / "builds" / cache_key(source, target)
    entry.mkdir(parents=True, exist_ok=True)
    with _locked(entry / "lock"):
        cached = _read_status(entry)
        if cached is not None:
            return _outcome(entry, cached, cache_hit=True)
        with host_lock.shared() if host_lock is not None else nullcontext():
            status = _build(submission_path, init_inputs_path, seed, target, entry, work_dir, launcher)
        if status.get("cacheable"):
            _write_status(entry, status)
        return _outcome(entry, status, cache_hit=False)


def _build(submission_path: Path, init_inputs_path: Path, seed: int, target: BuildTarget, entry: Path,
           work_dir: Path, launcher: Launcher) -> dict[str, Any]:
    cache_dir = entry.parent.parent  # entries lie at cache_dir/builds/<key>
    ext_dir = entry / "ext"
    ext_dir.mkdir(exist_ok=True)
    env = child_env(work_dir, ext_dir, {"MAX_JOBS": str(target.jobs), **arch_env(target)})
    pch = header_pch.ready_dirs(cache_dir) if target.pch else {}
    # Only ext/ is the child's: the entry's status.json and lock stay the judge's, and the PCHs are only read.
    # RLIMIT_CPU per compiler process at the wall limit: one that burns that much CPU is runaway template
    # instantiation.
    readable = (package_root(), *((header_pch.pch_root(cache_dir),) if pch else ()))
    spec = ChildSpec(python_argv("kernelgrade.evaluator.child.compile_child"), env, work_dir,
                     writable=(ext_dir,), readable=readable, gpu_index=None, purpose="compile",
                     hidden=(entry.parent, work_dir.parent),
                     limits=ResourceLimits(cpu_seconds=math.ceil(target.timeout_s)), cpus=target.cpus)
    child = ChildProcess(launcher.popen(spec))
    # A lean build that fails does so in nvcc's front end, about the first third of a build; the extra third
    # keeps the limit a limit on the build as given.
    timeout_s = target.timeout_s * (4 / 3 if target.lean else 1)
    command = {"submission": str(submission_path), "init_inputs": str(init_inputs_path), "seed": seed, "pch": pch,
               "lean": target.lean}
    try:
        reply = child.request(command, timeout=timeout_s)
    except ChildTimeout:
        return _status(False, "timeout", f"the build ran past its {timeout_s:.0f} s limit", child)
    except (ChildGone, BadReply) as exc:
        return _status(False, "compile_crashed", f"the compile step died: {exc}", child)
    finally:
        child.kill()
    if target.pch:
        header_pch.build_missing(cache_dir, reply.get("pch_missed") or ())
    return _reply_status(reply, child.log.text(), str(ext_dir))


def _reply_status(reply: dict[str, Any], log: str, build_dir: str) -> dict[str, Any]:
    builds = reply.get("builds") or []
    failed = [b for b in builds if not b.get("ok")]
    if not failed:
        prebuilt = [b["prebuilt"] for b in builds if isinstance(b.get("prebuilt"), dict)]
        return {"ok": True, "cacheable": True, "log": log[-20000:], "builds": len(builds), "prebuilt": prebuilt}
    errors = "\n".join(str(b.get("error", "")) for b in failed)
    excerpt = first_errors(errors + "\n" + log, build_dir)
    names = ", ".join(str(b.get("name")) for b in failed)
    message = (f"the extension {names} did not build. The compiler said:\n{excerpt}\n"
               "Fix the error above (or the flags passed to load_inline) and submit again.")
    return {"ok": False, "cacheable": True, "code": "build_failed", "message": message, "detail": excerpt,
            "log": log[-20000:], "builds": len(builds)}


def _status(ok: bool, code: str, message: str, child: ChildProcess) -> dict[str, Any]:
    log = child.log.text()
    return {"ok": ok, "cacheable": False, "code": code, "message": message, "detail": first_errors(log),
            "log": log[-20000:], "builds": 0}


def _outcome(entry: Path, status: dict[str, Any], cache_hit: bool) -> CompileOutcome:
    failure = None
    if not status.get("ok"):
        failure = Failure(Stage.COMPILE, str(status.get("code")), str(status.get("message")),
                          detail=str(status.get("detail", "")))
    prebuilt = tuple(p for p in map(Prebuilt.from_json, status.get("prebuilt", [])) if p is not None)
    return CompileOutcome(entry / "ext", cache_hit, failure, str(status.get("log", "")), int(status.get("builds", 0)),
                          prebuilt)


def _read_status(entry: Path) -> dict[str, Any] | None:
    path = entry / "status.json"
    if not path.exists():
        return None
    data = json.loads(path.read_text())
    return data if isinstance(data, dict) else None


def _write_status(entry: Path, status: dict[str, Any]) -> None:
    tmp = entry / "status.json.tmp"
    tmp.write_text(json.dumps(status))
    os.replace(tmp, entry / "status.json")


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    """One build per cache entry at a time: a duplicate submission waits and then hits the cache."""
    with open(path, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
