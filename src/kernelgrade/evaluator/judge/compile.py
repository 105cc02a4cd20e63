"""The compile stage: build the submission's extensions in a child with no GPU, cached by content.

A cache entry is a directory named by the hash of (source, torch version, CUDA version, target arch,
device kind, harness version). Its `ext/` is the compile child's TORCH_EXTENSIONS_DIR; the run child gets
copies of the libraries built there (wire/prebuilt.py). Successes and compile errors are cached (status.json);
timeouts and grader faults are not, and their `ext/` is discarded.

A build may be interrupted by anything: its deadline, a crash, the judge's whole server killed. Whatever it
left does not block the next build of the source. An entry without a status holds no finished build, so its
`ext/` is discarded before building, unless a live build still holds a lock there (a child that outlived its
judge); the compile child waits for such a build, and takes over a lock whose owner died (wire/build_lock.py).
One judge at a time builds an entry: they take turns through an flock on the entry's own `lock` file.

The limits: a wall deadline on the whole compile step (import, constructor, builds), and RLIMIT_CPU above it
on each of its processes. Either one's end is verdict `timeout`, named by the limit that fired.

With `target.lean`, the compile child builds CUDA sources without torch/extension.h first and as given where
that fails (child/lean_header.py); either build answers for the source, so the cache key leaves it out.

With `target.pch`, the compile child may compile main.cpp against a precompiled torch/extension.h that this
judge built (header_pch.py), shown to the child read-only; a variant the child wanted and did not find is built
on a thread of its own once the compile is done, for the next ones: this compile's outcome does not wait for it.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import math
import os
import secrets
import shutil
import signal
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
from kernelgrade.evaluator.wire import build_lock
from kernelgrade.evaluator.wire.compile_protocol import CPU_LIMIT_STATUS, CompileReply, CompileRequest
from kernelgrade.evaluator.wire.prebuilt import Prebuilt

# Bump when the compile child's behaviour changes, so old cache entries are not trusted. 4: build locks held
# with flock; an entry of an older harness may hold torch's plain lock file, which no owner holds.
HARNESS_VERSION = "4"
# RLIMIT_CPU of the compile child and of each compiler it runs lies this far above the wall limit. A thread
# cannot use more CPU time than wall time, so a single-threaded runaway (an endless loop at import, a
# template instantiation that never ends) meets the wall limit first and is named by it; only a process
# burning several cores at once reaches the CPU limit first. The margin covers the child's start, before the
# judge's clock starts, and the moment the judge takes to act on its deadline; seconds, so five are plenty.
CPU_MARGIN_S = 5
# A lean CUDA build that fails does so in nvcc's front end, about the first third of a build; this extra
# third of the wall limit keeps the limit a limit on the build as given.
LEAN_EXTRA = 1 / 3
# What the compile step runs, for the messages of its limits.
COMPILE_STEP = "the compile step (importing the submission, constructing ModelNew and building its extensions)"
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


@dataclass(frozen=True)
class BuildLimits:
    wall_s: float  # the judge's deadline on the whole compile step
    cpu_s: int  # RLIMIT_CPU's soft limit on each of its processes

    @classmethod
    def of(cls, target: BuildTarget) -> BuildLimits:
        wall_s = target.timeout_s * (1 + LEAN_EXTRA if target.lean and target.device == "cuda" else 1)
        return cls(wall_s, math.ceil(wall_s) + CPU_MARGIN_S)


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
        _clear_unfinished(entry)
        with host_lock.shared() if host_lock is not None else nullcontext():
            status = _build(submission_path, init_inputs_path, seed, target, entry, work_dir, launcher, host_lock)
        if status.cacheable:
            _write_status(entry, status)
        else:
            _discard(entry)
        return _outcome(entry, status, cache_hit=False)


def _build(submission_path: Path, init_inputs_path: Path, seed: int, target: BuildTarget, entry: Path,
           work_dir: Path, launcher: Launcher, host_lock: HostLock | None) -> BuildStatus:
    cache_dir = entry.parent.parent  # entries lie at cache_dir/builds/<key>
    ext_dir = entry / "ext"
    ext_dir.mkdir(exist_ok=True)
    env = child_env(work_dir, ext_dir, {"MAX_JOBS": str(target.jobs), **arch_env(target)})
    pch = header_pch.ready_dirs(cache_dir) if target.pch else {}
    limits = BuildLimits.of(target)
    # Only ext/ is the child's: the entry's status.json and lock stay the judge's, and the PCHs are only read.
    readable = (package_root(), *((header_pch.pch_root(cache_dir),) if pch else ()))
    spec = ChildSpec(python_argv("kernelgrade.evaluator.child.compile_child"), env, work_dir,
                     writable=(ext_dir,), readable=readable, gpu_index=None, purpose="compile",
                     hidden=(entry.parent, work_dir.parent),
                     limits=ResourceLimits(cpu_seconds=limits.cpu_s), cpus=target.cpus)
    child = ChildProcess(launcher.popen(spec))
    try:
        reply = _exchange(child, CompileRequest(submission_path, init_inputs_path, seed, pch, target.lean), limits)
    finally:
        child.kill()
    if isinstance(reply, BuildStatus):
        return reply
    if target.pch and reply.pch_missed:
        header_pch.build_later(cache_dir, reply.pch_missed, host_lock)
    return _reply_status(reply, child.log.text(), str(ext_dir))


def _exchange(child: ChildProcess, request: CompileRequest, limits: BuildLimits) -> CompileReply | BuildStatus:
    """The child's reply, or the status of a compile step that ended without one."""
    try:
        return Codec().decode(CompileReply, child.request(Codec().encode_dataclass(request), timeout=limits.wall_s))
    except ChildTimeout:
        return _status("timeout", f"{COMPILE_STEP} ran past its {limits.wall_s:.0f} s limit and was killed. Look"
                       " for an endless loop or a wait at import or in ModelNew's constructor; a build that needs"
                       " longer must be made smaller.", child)
    except ChildGone as exc:
        if _out_of_cpu(child.proc.returncode):
            return _status("timeout", f"{COMPILE_STEP} used its {limits.cpu_s} s of CPU time and was killed. Look"
                           " for an endless loop or threads kept busy at import or in ModelNew's constructor.",
                           child)
        return _status("compile_crashed", f"the compile step died: {exc}", child)
    except BadReply as exc:
        return _status("compile_crashed", f"the compile step died: {exc}", child)
    except DecodeError as exc:
        return _status("compile_crashed", f"the compile step died: its reply was not the harness's ({exc})", child)


def _out_of_cpu(returncode: int | None) -> bool:
    """The child's own SIGXCPU handler's status, or a death by SIGXCPU (a child whose handler was replaced)."""
    return returncode in (CPU_LIMIT_STATUS, -signal.SIGXCPU)


def _clear_unfinished(entry: Path) -> None:
    """An entry without a status holds no finished build: its `ext/` is what an interrupted build left. Start
    afresh, unless a live build holds one of its locks (a child that outlived its judge's server); the compile
    child then waits for that build (wire/build_lock.py)."""
    ext_dir = entry / "ext"
    if not any(build_lock.held(lock) for lock in build_lock.locks_in(ext_dir)):
        _discard(entry)


def _discard(entry: Path) -> None:
    """Remove the entry's `ext/`: moved aside first, in one step, so that what a dying child may still write
    lands outside the next build's dir. After a build that did not finish, without looking for live locks: the
    only builder of the entry was this judge's child, killed by now, though its processes may take a moment
    to die."""
    ext_dir = entry / "ext"
    if not ext_dir.exists():
        return
    aside = entry / f"discarded-{secrets.token_hex(4)}"
    os.rename(ext_dir, aside)
    shutil.rmtree(aside, ignore_errors=True)


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
