"""The seam through which the judge starts its children (the way httpx takes a transport).

A launcher turns a ChildSpec into a running process whose stdin carries the judge's commands and whose
stdout carries the child's replies. The plain subprocess launcher isolates nothing beyond a process
group of its own; the sandboxing launchers (bwrap.py, unshare.py, chosen by sandbox.make_launcher) wrap
the same spec in namespaces and limits.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from kernelgrade.evaluator.sandbox.cpus import on_cpus

GiB = 1024**3


@dataclass(frozen=True)
class ResourceLimits:
    """What one child may consume. Sandboxing launchers apply these; SubprocessLauncher applies none.

    Virtual memory is never capped (RLIMIT_AS): CUDA reserves address ranges far larger than any RAM.
    """

    # RLIMIT_CPU, per process: its soft limit (SIGXCPU), the hard one (SIGKILL) a few seconds above it
    # (isolation.CPU_KILL_AFTER_S). None for the run child, whose stages have the judge's wall deadlines.
    cpu_seconds: int | None = None
    # A PyTorch CUDA process holds a few hundred descriptors (libraries, the driver, pipes); 4096 leaves
    # room for honest use and stops descriptor exhaustion from reaching the host's table.
    open_files: int = 4096
    # Larger than any built extension, small enough that one runaway write cannot fill the disk by itself.
    # Tensor files larger than this are written as several parts, each under it (wire/tensorfile.py), so
    # it bounds no output's size.
    file_bytes: int = 4 * GiB
    # Processes and threads (RLIMIT_NPROC and a pids cgroup where there is one). None: the launcher's default.
    processes: int | None = None
    # Memory (a cgroup limit, where the host allows one). None: the launcher's default.
    memory_bytes: int | None = None


@dataclass(frozen=True)
class ChildSpec:
    """Everything a launcher needs to start one child."""

    argv: tuple[str, ...]
    env: Mapping[str, str]
    work_dir: Path
    # Paths the child must be able to write besides its work dir (the compile cache entry's build dir).
    writable: tuple[Path, ...] = ()
    # Paths the child must be able to read (the kernelgrade package itself).
    readable: tuple[Path, ...] = ()
    # The judge's CUDA device index the child may use, or None for no GPU at all.
    gpu_index: int | None = None
    purpose: str = "run"
    extra: Mapping[str, str] = field(default_factory=dict)
    # Directories shared with other jobs (the work root, the compile cache): a sandbox shows the child only
    # its own work dir and writable dirs inside them, never their siblings.
    hidden: tuple[Path, ...] = ()
    limits: ResourceLimits = field(default_factory=ResourceLimits)
    # The cores the child runs on (cpus.py); empty: those of the thread that starts it.
    cpus: tuple[int, ...] = ()
    # Descriptors the child inherits at their numbers (the judge's shared region for its outputs).
    shared_fds: tuple[int, ...] = ()


class Launcher(Protocol):
    """Starts children; `level` names the isolation it gives, recorded with every result."""

    @property
    def level(self) -> str: ...

    def popen(self, spec: ChildSpec) -> subprocess.Popen[bytes]: ...


def visible_device(gpu_index: int | None, parent_env: Mapping[str, str]) -> str:
    """The CUDA_VISIBLE_DEVICES value that exposes exactly the judge's device `gpu_index` (or none)."""
    if gpu_index is None:
        return ""
    parent = parent_env.get("CUDA_VISIBLE_DEVICES")
    if parent:
        ids = [p.strip() for p in parent.split(",") if p.strip()]
        if gpu_index < len(ids):
            return ids[gpu_index]
    return str(gpu_index)


def child_environment(spec: ChildSpec, parent_env: Mapping[str, str]) -> dict[str, str]:
    env = dict(spec.env)
    env["CUDA_VISIBLE_DEVICES"] = visible_device(spec.gpu_index, parent_env)
    return env


class SubprocessLauncher:
    """No isolation beyond a fresh process group: for trusted local use and for tests of the judge."""

    level = "none"

    def popen(self, spec: ChildSpec) -> subprocess.Popen[bytes]:
        with on_cpus(spec.cpus):
            return subprocess.Popen(
                list(spec.argv),
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                cwd=spec.work_dir,
                env=child_environment(spec, os.environ),
                start_new_session=True,
                close_fds=True,
                pass_fds=spec.shared_fds,
            )
