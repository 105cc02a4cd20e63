"""Choosing a launcher by sandbox level name, and refusing to run below the operator's minimum.

Levels, weakest first: `none` (a plain subprocess), `unshare` (namespaces, limits; the host's filesystem),
`bwrap` (namespaces, limits, a read-only filesystem view). A level counts as available only after a
trivial child has really been started under it and reported a network namespace of its own; the probe
runs once per process and level.

    launcher = make_launcher(settings.sandbox, settings.sandbox_minimum, SandboxOptions(hidden=(data_dir,)))

raises SandboxUnavailable when the named level (or, for `auto`, any level at or above the minimum) cannot
be had; a service should refuse to start on it. `none` is never chosen by accident: asked for by name, or
as the last resort of `auto`, it needs `allow_unsandboxed=True`, the caller's record of an operator's
explicit opt-out. `describe_launcher` says what a launcher isolates.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path

from kernelgrade.evaluator.sandbox.bwrap import BwrapLauncher, BwrapMissing
from kernelgrade.evaluator.sandbox.child_env import child_env, package_root
from kernelgrade.evaluator.sandbox.child_process import BadReply, ChildGone, ChildProcess, ChildTimeout
from kernelgrade.evaluator.sandbox.gpu_nodes import GpuNodesError
from kernelgrade.evaluator.sandbox.isolation import SandboxOptions
from kernelgrade.evaluator.sandbox.launcher import ChildSpec, Launcher, SubprocessLauncher
from kernelgrade.evaluator.sandbox.unshare import UnshareLauncher, UnshareMissing

__all__ = ["LEVELS", "SandboxOptions", "SandboxUnavailable", "UnsandboxedRefused", "describe_launcher", "make_launcher",
           "probe_level"]

LEVELS = ("none", "unshare", "bwrap")
# Starting Python in a fresh sandbox takes well under a second; this allows a cold disk cache on a busy host.
PROBE_TIMEOUT_S = 30.0
# The probe child reports its network namespace, which must differ from the judge's, and its uid, not root.
_PROBE_CODE = ("import json, os; print(json.dumps({'net': os.readlink('/proc/self/ns/net'), 'uid': os.getuid()}),"
               " flush=True)")


INSTALL_HINT = ("install bubblewrap (as root: apt-get install bubblewrap; `make serve` run as root installs it),"
                " or run the judge where user namespaces are allowed so that util-linux unshare works")


class SandboxUnavailable(Exception):
    """The requested (or required) isolation cannot be had on this machine."""


class UnsandboxedRefused(SandboxUnavailable):
    """No sandbox would isolate the submissions, and running them without one was not explicitly allowed."""


_BUILDERS: dict[str, Callable[[SandboxOptions], Launcher]] = {
    "none": lambda options: SubprocessLauncher(),
    "unshare": lambda options: UnshareLauncher(options=options),
    "bwrap": lambda options: BwrapLauncher(options=options),
}
_probes: dict[tuple[str, SandboxOptions], str] = {}
_probe_lock = threading.Lock()


def make_launcher(name: str = "auto", minimum: str = "none", options: SandboxOptions | None = None, *,
                  allow_unsandboxed: bool = False) -> Launcher:
    options = options or SandboxOptions()
    if name not in ("auto", *LEVELS):
        raise SandboxUnavailable(f"unknown sandbox {name!r}; use one of auto, {', '.join(LEVELS)}")
    if minimum not in LEVELS:
        raise SandboxUnavailable(f"unknown minimum sandbox level {minimum!r}; use one of {', '.join(LEVELS)}")
    if name != "auto":
        if LEVELS.index(name) < LEVELS.index(minimum):
            raise SandboxUnavailable(f"sandbox {name!r} is below the required minimum {minimum!r}")
        if name == "none" and not allow_unsandboxed:
            raise UnsandboxedRefused("sandbox 'none' runs submissions with no isolation at all, and that was not"
                                     " explicitly allowed; use a sandbox: " + INSTALL_HINT)
        return _available(name, options)
    return _strongest(minimum, options, allow_unsandboxed)


def _strongest(minimum: str, options: SandboxOptions, allow_unsandboxed: bool) -> Launcher:
    """`auto`: bwrap, else unshare, else (explicitly allowed only) none."""
    reasons: list[str] = []
    for level in reversed(LEVELS[LEVELS.index(minimum):]):
        if level == "none" and not allow_unsandboxed:
            raise UnsandboxedRefused("no sandbox works here, and running submissions with no isolation was not"
                                     f" explicitly allowed ({'; '.join(reasons)}). To fix it, " + INSTALL_HINT)
        try:
            return _available(level, options)
        except SandboxUnavailable as exc:
            reasons.append(str(exc))
    raise SandboxUnavailable(f"no sandbox at or above {minimum!r} works here: " + "; ".join(reasons)
                             + ". To fix it, " + INSTALL_HINT)


def _available(level: str, options: SandboxOptions) -> Launcher:
    reason = probe_level(level, options)
    if reason:
        raise SandboxUnavailable(f"sandbox {level!r} is not available on this machine: {reason}")
    return _BUILDERS[level](options)


def probe_level(level: str, options: SandboxOptions | None = None) -> str:
    """Empty if `level` works here, else why not. Probed once per process, level and options."""
    key = (level, options or SandboxOptions())
    with _probe_lock:
        if key not in _probes:
            _probes[key] = _probe(*key)
        return _probes[key]


def _probe(level: str, options: SandboxOptions) -> str:
    if level == "none":
        return ""
    try:
        launcher = _BUILDERS[level](options)
    except (BwrapMissing, UnshareMissing) as exc:
        return str(exc)
    work_dir = Path(tempfile.mkdtemp(prefix="kernelgrade-probe-"))
    try:
        return _run_probe(launcher, work_dir)
    except (OSError, GpuNodesError) as exc:
        return f"{type(exc).__name__}: {exc}"
    finally:
        shutil.rmtree(work_dir, ignore_errors=True)


def _run_probe(launcher: Launcher, work_dir: Path) -> str:
    env = child_env(work_dir, work_dir, {})
    spec = ChildSpec((sys.executable, "-s", "-c", _PROBE_CODE), env, work_dir, readable=(package_root(),),
                     purpose="probe")
    child = ChildProcess(launcher.popen(spec))
    try:
        reply = child.receive(PROBE_TIMEOUT_S)
    except (ChildGone, ChildTimeout, BadReply) as exc:
        log = child.log.text().strip()[-500:]
        denied = "Permission denied" in log
        hint = " (the sandbox's uid was denied a path the child needs)" if denied else ""
        return f"a trivial child did not start ({exc or type(exc).__name__}): {log}{hint}"
    finally:
        child.kill()
    if reply.get("net") == os.readlink("/proc/self/ns/net"):
        return "the child shared the judge's network namespace"
    if reply.get("uid") == 0:
        return "the child ran as root"
    return ""


def describe_launcher(launcher: Launcher) -> tuple[str, ...]:
    """What a launcher isolates, for a health page or a log line; a plain subprocess isolates nothing."""
    features: Callable[[], tuple[str, ...]] | None = getattr(launcher, "features", None)
    return (launcher.level, *(features() if features else ("no isolation: a plain subprocess",)))
