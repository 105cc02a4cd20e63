"""The bubblewrap launcher, the strongest sandbox level (docs/threats.md, "The sandbox").

Each child gets: new pid, network, ipc, uts and cgroup namespaces (no network at all, only a loopback of
its own); an empty read-only root holding only the host paths it uses (child_roots.py: /usr, the
interpreter, site-packages, the toolchain, a few /etc entries), each bound read-only, and a passwd and
group naming only itself; an empty, read-only /tmp; a private /dev/shm; a minimal /dev plus, for a run
child, exactly the device nodes of its one GPU; its work dir and build dir writable (and nothing else but
/dev/shm), bound at their own paths so absolute paths stay valid; the directories shared with other jobs,
the judge's home and the host's socket directories covered by empty read-only tmpfs wherever a bound root
would show them; an unprivileged uid (isolation.py); resource limits and cgroups (sandbox_init.py,
cgroups.py). --die-with-parent and the pid namespace make the judge's process-group kill reach everything
inside.
"""

from __future__ import annotations

import contextlib
import functools
import os
import shutil
import subprocess
from collections.abc import Iterator, Sequence
from pathlib import Path

from kernelgrade.evaluator.sandbox import cgroups
from kernelgrade.evaluator.sandbox.child_env import child_env, package_root
from kernelgrade.evaluator.sandbox.child_roots import (
    SOCKET_DIRS,
    child_roots,
    covered_ops,
    describe_roots,
    existing,
    home_dirs,
    outermost,
    under_any,
    unreachable_ancestors,
)
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

__all__ = ["BwrapLauncher", "BwrapMissing", "identity_files", "outermost", "view_args"]

MiB = 1024**2
# /tmp is private and ends read-only (TMPDIR is the work dir); it only holds the mount points leading to
# the work dir, so it needs next to no room.
TMP_BYTES = 1 * MiB
# PyTorch's shared-memory tensors use /dev/shm; a single-process run child needs little of it.
SHM_BYTES = 512 * MiB


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
        with _data_pipes(identity_files(who, spec.work_dir)) as data_fds:
            args, env = self.command(spec, who, data_fds)
            return start(args, spec, env, self.cgroups, self.options, signal_statuses=True,
                         pass_fds=(*(fd for fd, _ in data_fds), *spec.shared_fds))

    def command(self, spec: ChildSpec, who: Identity, data_fds: Sequence[tuple[int, str]] = ()
                ) -> tuple[list[str], dict[str, str]]:
        """The bwrap command line and environment for one child (without its cgroup step); `data_fds`:
        (readable descriptor, path) of files bwrap copies into the child's view."""
        env = child_environment(spec, os.environ)
        args = [self.bwrap, *self._namespace_args(who), *self._filesystem_args(spec, who, data_fds)]
        if spec.gpu_index is not None:
            access = gpu_access(spec.gpu_index, os.environ)
            args += [a for node in access.nodes for a in ("--dev-bind", str(node), str(node))]
            env["CUDA_VISIBLE_DEVICES"] = access.visible_devices
        args += ["--chdir", str(spec.work_dir), "--", *helper_argv(inner_config(who, spec, self.options), spec.argv)]
        return args, env

    def features(self) -> tuple[str, ...]:
        user = describe_user(self.options)
        memory = self.cgroups.describe() if self.cgroups else "cgroups disabled by the operator"
        view = describe_roots(child_roots(child_env(Path("/"), Path("/"), {}), (package_root(),)))
        return (f"bwrap {self.bwrap}", "network: none", "filesystem: only the paths it uses, read-only; empty /tmp",
                f"read-only view: {', '.join(view)}", user, memory,
                "rlimits: NOFILE, FSIZE, CORE=0, NPROC, CPU for builds")

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

    def _filesystem_args(self, spec: ChildSpec, who: Identity, data_fds: Sequence[tuple[int, str]] = ()
                         ) -> list[str]:
        # No bind of the host's /: the root is bwrap's empty tmpfs, holding only what child_roots names.
        base = ["--proc", "/proc", "--dev", "/dev", *self._tmpfs("/tmp", TMP_BYTES),
                *self._tmpfs("/dev/shm", SHM_BYTES)]
        roots = child_roots(spec.env, spec.readable, gpu=spec.gpu_index is not None)
        writable = existing([spec.work_dir, *spec.writable])
        covers = self._covers(spec, who, [*roots.paths, *writable], roots.paths)
        # /tmp ends read-only: TMPDIR is the work dir, so the child's only writable places are its work dir,
        # its build dir and /dev/shm (kept for shared-memory tensors; memory the cgroup counts).
        view = view_args(covers, roots.paths, writable, [Path("/"), Path("/tmp"), Path("/dev/shm")])
        links = [a for target, path in roots.links for a in ("--symlink", target, str(path))]
        data = [a for fd, dest in data_fds for a in ("--perms", "0644", "--ro-bind-data", str(fd), dest)]
        return [*base, *view, *links, *data, "--remount-ro", "/tmp", "--remount-ro", "/"]

    def _covers(self, spec: ChildSpec, who: Identity, needed: list[Path], roots: Sequence[Path]) -> list[Path]:
        """What must be hidden inside the bound roots: the shared directories, the judge's home, socket
        directories, and (a root judge) directories its child could not pass through on the host."""
        wanted = {*self.options.hidden, *spec.hidden, *SOCKET_DIRS, *home_dirs()}
        if who.drop:
            wanted |= unreachable_ancestors(needed, who.uid, who.gid)
        inside = [p for p in existing(wanted) if any(r in p.parents for r in roots)]
        return outermost(p for p in inside if not under_any(p, [Path("/tmp"), Path("/dev/shm")]))


def identity_files(who: Identity, home: Path) -> list[tuple[str, bytes]]:
    """A passwd and group naming only the child itself: tools that look the uid up find it, and nothing
    of the host's accounts shows."""
    passwd = f"kernelgrade:x:{who.uid}:{who.gid}:kernelgrade sandbox:{home}:/usr/sbin/nologin\n"
    return [("/etc/passwd", passwd.encode()), ("/etc/group", f"kernelgrade:x:{who.gid}:\n".encode())]


@contextlib.contextmanager
def _data_pipes(files: Sequence[tuple[str, bytes]]) -> Iterator[list[tuple[int, str]]]:
    """Each file's content in a pipe for bwrap's --ro-bind-data; the judge's ends are closed on leaving,
    once the child holds its own copies. The contents are far below a pipe's buffer, so writing first
    cannot block."""
    fds: list[tuple[int, str]] = []
    try:
        for dest, content in files:
            read_end, write_end = os.pipe()
            fds.append((read_end, dest))
            os.write(write_end, content)
            os.close(write_end)
        yield fds
    finally:
        for fd, _ in fds:
            os.close(fd)


def view_args(covers: Sequence[Path], readable: Sequence[Path], writable: Sequence[Path],
              tmpfs_roots: Sequence[Path]) -> list[str]:
    """bwrap arguments that cover, then bind back, in order of depth so that deeper mounts land on top.
    Directories leading to a mount point inside a tmpfs are made 0755: bwrap's own would be 0700, which a
    dropped uid cannot pass."""
    args: list[str] = []
    mounted, made = list(tmpfs_roots), set[Path]()
    binds: list[Path] = []
    for path, kind in covered_ops(covers, readable, writable, tmpfs_roots):
        args += _parent_dirs(path, mounted, binds, made)
        flag = {"tmpfs": "--tmpfs", "rw": "--bind", "ro": "--ro-bind"}[kind]
        args += ["--perms", "0755", flag, str(path)] if kind == "tmpfs" else [flag, str(path), str(path)]
        (mounted if kind == "tmpfs" else binds).append(path)
    for path in covers:
        args += ["--remount-ro", str(path)]
    return args


def _parent_dirs(path: Path, mounted: Sequence[Path], binds: Sequence[Path], made: set[Path]) -> list[str]:
    inside = [m for m in [*mounted, *binds] if m in path.parents]
    if not inside:
        return []  # the mount point is on the host's (read-only) root and exists already
    root = max(inside, key=lambda m: len(m.parts))
    if root in binds:
        return []  # inside a bound host directory, where the directories leading to it exist
    args: list[str] = []
    for directory in reversed(path.parents):
        if root in directory.parents and directory not in made:
            made.add(directory)
            args += ["--perms", "0755", "--dir", str(directory)]
    return args
