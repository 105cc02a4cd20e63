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

import torch

from kernelgrade.evaluator.codec import Codec, DecodeError
from kernelgrade.evaluator.host import header_pch
from kernelgrade.evaluator.host.host_lock import HostLock
from kernelgrade.evaluator.judge.compiler_output import first_errors
from kernelgrade.evaluator.result import Failure, Stage
from kernelgrade.evaluator.sandbox.child_env import child_env, package_root, python_argv
from kernelgrade.evaluator.sandbox.child_process import BadReply, ChildGone, ChildProcess, ChildTimeout
from kernelgrade.evaluator.sandbox.launcher import ChildSpec, Launcher, ResourceLimits
from kernelgrade.evaluator.wire.compile_protocol import CompileReply, CompileRequest
from kernelgrade.evaluator.wire.prebuilt import Prebuilt

# Bump when the compile child's behaviour changes, so old cache entries are not trusted.
HARNESS_VERSION = "3"
# status.json files are read back by later versions of the judge: a field since removed is skipped.
_CACHED = Codec(ignore_unknown=True)


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
class BuildStatus:
    """A build's outcome as its cache entry keeps it (status.json); `cacheable` ones (successes and compile
    errors) are written there."""

    ok: bool
    cacheable: bool
    log: str
    builds: int
    prebuilt: tuple[Prebuilt, ...] = ()
    code: str = ""  # a failure's: build_failed, timeout, compile_crashed
    message: str = ""
    detail: str = ""


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
        if status.cacheable:
            _write_status(entry, status)
        return _outcome(entry, status, cache_hit=False)


def _build(submission_path: Path, init_inputs_path: Path, seed: int, target: BuildTarget, entry: Path,
           work_dir: Path, launcher: Launcher) -> BuildStatus:
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
    request = CompileRequest(submission_path, init_inputs_path, seed, pch, target.lean)
    try:
        reply = Codec().decode(CompileReply, child.request(Codec().encode_dataclass(request), timeout=timeout_s))
    except ChildTimeout:
        return _status("timeout", f"the build ran past its {timeout_s:.0f} s limit", child)
    except (ChildGone, BadReply) as exc:
        return _status("compile_crashed", f"the compile step died: {exc}", child)
    except DecodeError as exc:
        return _status("compile_crashed", f"the compile step died: its reply was not the harness's ({exc})", child)
    finally:
        child.kill()
    if target.pch:
        header_pch.build_missing(cache_dir, reply.pch_missed)
    return _reply_status(reply, child.log.text(), str(ext_dir))


def _reply_status(reply: CompileReply, log: str, build_dir: str) -> BuildStatus:
    if not reply.failed:
        prebuilt = tuple(b.prebuilt for b in reply.builds if b.prebuilt is not None)
        return BuildStatus(True, True, log[-20000:], len(reply.builds), prebuilt)
    errors = "\n".join(b.error for b in reply.failed)
    excerpt = first_errors(errors + "\n" + log, build_dir)
    names = ", ".join(b.name for b in reply.failed)
    message = (f"the extension {names} did not build. The compiler said:\n{excerpt}\n"
               "Fix the error above (or the flags passed to load_inline) and submit again.")
    return BuildStatus(False, True, log[-20000:], len(reply.builds), code="build_failed", message=message,
                       detail=excerpt)


def _status(code: str, message: str, child: ChildProcess) -> BuildStatus:
    """A build that ended without a reply: not cached, so the next submission of the source builds again."""
    log = child.log.text()
    return BuildStatus(False, False, log[-20000:], 0, code=code, message=message, detail=first_errors(log))


def _outcome(entry: Path, status: BuildStatus, cache_hit: bool) -> CompileOutcome:
    failure = None
    if not status.ok:
        failure = Failure(Stage.COMPILE, status.code, status.message, detail=status.detail)
    return CompileOutcome(entry / "ext", cache_hit, failure, status.log, status.builds, status.prebuilt)


def _read_status(entry: Path) -> BuildStatus | None:
    """The cached outcome; None (build again, and overwrite it) where there is none or it does not read."""
    path = entry / "status.json"
    if not path.exists():
        return None
    try:
        return _CACHED.decode(BuildStatus, json.loads(path.read_text()))
    except ValueError:  # DecodeError included
        return None


def _write_status(entry: Path, status: BuildStatus) -> None:
    tmp = entry / "status.json.tmp"
    tmp.write_text(json.dumps(_CACHED.encode_dataclass(status)))
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
