"""The bubblewrap launcher, the strongest sandbox level (THREATS.md, "The sandbox").

Each child gets: new pid, network, ipc, uts and cgroup namespaces (no network at all, only a loopback of
its own); the host's root read-only; an empty, read-only /tmp; a private /dev/shm; a minimal /dev plus,
for a run child, exactly the device nodes of its one GPU; its work dir and build dir writable (and
nothing else but /dev/shm), bound at their own paths so absolute paths stay valid; the directories shared
with other jobs, the judge's home and the host's socket directories covered by empty read-only tmpfs; an
unprivileged uid (isolation.py); resource limits and cgroups (sandbox_init.py, cgroups.py).
--die-with-parent and the pid namespace make the judge's process-group kill reach everything inside.
"""

from __future__ import annotations

import functools
import os
import shutil
import stat
import subprocess
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path

from kernelgrade.evaluator.sandbox import cgroups
from kernelgrade.evaluator.sandbox.gpu_nodes import gpu_access
from kernelgrade.evaluator.sandbox.isolation import (
    Identity,
    SandboxedPopen,
    SandboxOptions,
    describe_user,
    hand_over,
    helper_argv,
    identity,
    inner_config,
    start,
)
from kernelgrade.evaluator.sandbox.launcher import ChildSpec, child_environment

MiB = 1024**2
# /tmp is private and ends read-only (TMPDIR is the work dir); it only holds the mount points leading to
# the work dir, so it needs next to no room.
TMP_BYTES = 1 * MiB
# PyTorch's shared-memory tensors use /dev/shm; a single-process run child needs little of it.
SHM_BYTES = 512 * MiB
# Host directories of local services' sockets (Postgres, MySQL, D-Bus, Docker): a unix socket can still
# be connected to through a read-only mount, so these are hidden, not merely read-only.
SOCKET_DIRS = (Path("/run"), Path("/var/run"))
# Environment variables naming directories the child's compilers and libraries come from.
TOOL_DIR_VARIABLES = ("CUDA_HOME", "CUDA_PATH", "CUDA_ROOT", "CUDNN_HOME")


class BwrapMissing(Exception):
    """No bwrap executable was given or found on PATH."""


@functools.lru_cache(maxsize=8)
def _help_text(bwrap: str) -> str:
    """bwrap's option list, to use newer options (--size, --disable-userns) only where they exist."""
    try:
        done = subprocess.run([bwrap, "--help"], capture_output=True, text=True, timeout=10, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return done.stdout + done.stderr


class BwrapLauncher:
    level = "bwrap"

    def __init__(self, bwrap: str | None = None, options: SandboxOptions | None = None) -> None:
        self.options = options or SandboxOptions()
        found = bwrap or self.options.bwrap or shutil.which("bwrap")
        if not found:
            raise BwrapMissing("bwrap (Debian package bubblewrap) is not on PATH")
        self.bwrap = found
        self.cgroups = cgroups.probe(self.options.cgroup_root) if self.options.use_cgroups else None

    def popen(self, spec: ChildSpec) -> SandboxedPopen:
        who = identity(self.options)
        hand_over(spec.work_dir, spec.writable, who)
        args, env = self.command(spec, who)
        return start(args, spec, env, self.cgroups, self.options, signal_statuses=True)

    def command(self, spec: ChildSpec, who: Identity) -> tuple[list[str], dict[str, str]]:
        """The bwrap command line and environment for one child (without its cgroup step)."""
        env = child_environment(spec, os.environ)
        args = [self.bwrap, *self._namespace_args(who), *self._filesystem_args(spec, who)]
        if spec.gpu_index is not None:
            access = gpu_access(spec.gpu_index, os.environ)
            args += [a for node in access.nodes for a in ("--dev-bind", str(node), str(node))]
            env["CUDA_VISIBLE_DEVICES"] = access.visible_devices
        args += ["--chdir", str(spec.work_dir), "--", *helper_argv(inner_config(who, spec, self.options), spec.argv)]
        return args, env

    def features(self) -> tuple[str, ...]:
        user = describe_user(self.options)
        memory = self.cgroups.describe() if self.cgroups else "cgroups disabled by the operator"
        return (f"bwrap {self.bwrap}", "network: none", "filesystem: read-only root and /tmp",
                user, memory, "rlimits: NOFILE, FSIZE, CORE=0, NPROC, CPU for builds")

    def _namespace_args(self, who: Identity) -> list[str]:
        args = ["--die-with-parent", "--new-session", "--unshare-pid", "--unshare-net", "--unshare-ipc",
                "--unshare-uts", "--unshare-cgroup-try", "--hostname", "kernelgrade-sandbox"]
        if who.drop:
            # No user namespace: bwrap mounts as root. The helper inside keeps just what it needs to enter
            # the child's (uid-owned) work dir and switch to the sandbox uid; the switch clears them all.
            kept = ("CAP_SETUID", "CAP_SETGID", "CAP_DAC_OVERRIDE")
            return [*args, "--cap-drop", "ALL", *[a for cap in kept for a in ("--cap-add", cap)]]
        args += ["--unshare-user", "--uid", str(who.uid), "--gid", str(who.gid)]
        return [*args, "--disable-userns"] if "--disable-userns" in _help_text(self.bwrap) else args

    def _tmpfs(self, path: str, size: int) -> list[str]:
        sized = ["--size", str(size)] if "--size" in _help_text(self.bwrap) else []
        return ["--perms", "1777", *sized, "--tmpfs", path]

    def _filesystem_args(self, spec: ChildSpec, who: Identity) -> list[str]:
        base = ["--ro-bind", "/", "/", "--proc", "/proc", "--dev", "/dev",
                *self._tmpfs("/tmp", TMP_BYTES), *self._tmpfs("/dev/shm", SHM_BYTES)]
        readable = outermost(_existing([*spec.readable, *python_dirs(), *_tool_dirs(spec)]))
        writable = _existing([spec.work_dir, *spec.writable])
        covers = self._covers(spec, who, [*readable, *writable])
        # /tmp ends read-only: TMPDIR is the work dir, so the child's only writable places are its work dir,
        # its build dir and /dev/shm (kept for shared-memory tensors; memory the cgroup counts).
        view = view_args(covers, readable, writable, [Path("/tmp"), Path("/dev/shm")])
        return [*base, *view, "--remount-ro", "/tmp"]

    def _covers(self, spec: ChildSpec, who: Identity, needed: list[Path]) -> list[Path]:
        wanted = {*self.options.hidden, *spec.hidden, *SOCKET_DIRS, *_home()}
        if who.drop:
            wanted |= unreachable_ancestors(needed, who)
        return outermost(p for p in _existing(wanted) if p != Path("/")
                         and not _under_any(p, [Path("/tmp"), Path("/dev/shm")]))


def _home() -> list[Path]:
    """The judge's home (keys, credentials, shell history): hidden like the shared directories."""
    try:
        return [Path.home()]
    except (RuntimeError, KeyError):
        return []


def python_dirs() -> list[Path]:
    """Where the child's interpreter and its packages live (a virtualenv and the Python it was made from)."""
    exe = Path(os.path.realpath(sys.executable))
    return [Path(p) for p in {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix}] + [exe.parent]


def _tool_dirs(spec: ChildSpec) -> list[Path]:
    values = [spec.env.get(name, "") for name in TOOL_DIR_VARIABLES]
    values += spec.env.get("LD_LIBRARY_PATH", "").split(":")
    return [Path(v) for v in values if v.startswith("/")]


def _existing(paths: Iterable[Path]) -> list[Path]:
    resolved = {Path(os.path.realpath(p)) for p in paths}
    return sorted(p for p in resolved if p.is_dir())


def _under_any(path: Path, roots: Sequence[Path]) -> bool:
    return any(path == r or r in path.parents for r in roots)


def outermost(paths: Iterable[Path]) -> list[Path]:
    """The paths not inside another of them: covering a directory already covers what is inside it."""
    unique = sorted(set(paths), key=lambda p: len(p.parts))
    kept: list[Path] = []
    for path in unique:
        if not _under_any(path, kept):
            kept.append(path)
    return kept


def unreachable_ancestors(paths: Iterable[Path], who: Identity) -> set[Path]:
    """For each path, the topmost directory above it that the sandbox uid may not pass through (a root
    judge's 0700 home holding the interpreter, say). Covering it and binding the path back gives the child
    a way in without opening the rest of that directory."""
    found: set[Path] = set()
    for path in paths:
        for ancestor in reversed(path.parents[:-1]):  # from just below / down to the parent
            if not _traversable(ancestor, who):
                found.add(ancestor)
                break
    return found


def _traversable(directory: Path, who: Identity) -> bool:
    info = directory.stat()
    if info.st_uid == who.uid:
        return bool(info.st_mode & stat.S_IXUSR)
    if info.st_gid == who.gid:
        return bool(info.st_mode & stat.S_IXGRP)
    return bool(info.st_mode & stat.S_IXOTH)


def view_args(covers: Sequence[Path], readable: Sequence[Path], writable: Sequence[Path],
              tmpfs_roots: Sequence[Path]) -> list[str]:
    """bwrap arguments that cover, then bind back, in order of depth so that deeper mounts land on top.
    Directories leading to a mount point inside a tmpfs are made 0755: bwrap's own would be 0700, which a
    dropped uid cannot pass."""
    ops = [(p, "tmpfs") for p in covers] + [(p, "rw") for p in writable]
    ops += [(p, "ro") for p in readable if _under_any(p, [*covers, *tmpfs_roots]) and p not in writable]
    ops.sort(key=lambda op: (len(op[0].parts), op[1] != "tmpfs"))
    args: list[str] = []
    mounted, made = list(tmpfs_roots), set[Path]()
    for path, kind in ops:
        args += _parent_dirs(path, mounted, made)
        flag = {"tmpfs": "--tmpfs", "rw": "--bind", "ro": "--ro-bind"}[kind]
        args += ["--perms", "0755", flag, str(path)] if kind == "tmpfs" else [flag, str(path), str(path)]
        if kind == "tmpfs":
            mounted.append(path)
    for path in covers:
        args += ["--remount-ro", str(path)]
    return args


def _parent_dirs(path: Path, mounted: Sequence[Path], made: set[Path]) -> list[str]:
    inside = [m for m in mounted if m in path.parents]
    if not inside:
        return []  # the mount point is on the host's (read-only) root and exists already
    root = max(inside, key=lambda m: len(m.parts))
    args: list[str] = []
    for directory in reversed(path.parents):
        if root in directory.parents and directory not in made:
            made.add(directory)
            args += ["--perms", "0755", "--dir", str(directory)]
    return args
