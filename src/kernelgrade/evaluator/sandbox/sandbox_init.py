"""The last step before a sandboxed child: `python -I -S sandbox_init.py CONFIG -- ARGV...`.

It joins the child's cgroups, makes itself the first victim of the kernel's OOM killer, applies the
mounts of its mount namespace (the unshare fallback's covers, see child_roots.py), drops to the sandbox
uid and sets resource limits, then replaces itself with ARGV. Launchers run it twice: outside the
namespaces to join cgroups (only the judge can write there), and inside them for the rest (so that
RLIMIT_NPROC counts the sandbox's own uid). Doing this in a helper process keeps subprocess.Popen free of
preexec_fn, which is unsafe in the judge's threaded process.

It is run as a script, not imported: the standard library only, nothing from the package.
"""

from __future__ import annotations

import ctypes
import json
import os
import resource
import stat
import sys
from typing import Any

# The kernel's OOM killer picks the process with the highest score; 1000 makes the child its first choice
# over the judge, the database and other children, which is what protects the host where no memory
# cgroup exists.
OOM_SCORE_ADJ = "1000"
# mount(2) flags (linux/mount.h).
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_REMOUNT, MS_BIND, MS_REC = 1, 2, 4, 32, 4096, 16384
# A cover only holds the directories leading to what is bound back inside it.
COVER_OPTIONS = b"mode=0755,size=1m"


def join_cgroups(procs_files: list[str]) -> None:
    for path in procs_files:
        with open(path, "w") as handle:
            handle.write("0")  # 0: the writing process itself


def drop_privileges(uid: int, gid: int) -> None:
    os.setgroups([])
    os.setresgid(gid, gid, gid)
    os.setresuid(uid, uid, uid)


def apply_rlimits(limits: dict[str, int | list[int]]) -> None:
    """Each limit is one value (soft and hard alike) or [soft, hard]."""
    for name, value in limits.items():
        which = getattr(resource, name)
        soft, wanted = (value, value) if isinstance(value, int) else (int(value[0]), int(value[1]))
        _, hard = resource.getrlimit(which)
        # Only lowering is possible without privilege; never ask for more than the current hard limit.
        capped = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
        resource.setrlimit(which, (min(soft, capped), capped))


def prefer_as_oom_victim() -> None:
    try:
        with open("/proc/self/oom_score_adj", "w") as handle:
            handle.write(OOM_SCORE_ADJ)
    except OSError:
        pass  # no /proc here (the outer step may run before one is mounted); the cgroup still applies


def apply_mounts(ops: list[list[str]]) -> None:
    """Cover directories with empty tmpfs and bind paths back, in the given (depth) order: each op is
    [path, "tmpfs" | "ro" | "rw"]. Bind sources are opened before any cover hides them and mounted through
    /proc/self/fd, so a path under a cover (the interpreter under a 0700 home) is bound from the host's copy."""
    libc = ctypes.CDLL(None, use_errno=True)
    sources = {path: os.open(path, os.O_PATH | os.O_CLOEXEC) for path, kind in ops if kind != "tmpfs"}
    for path, kind in ops:
        if kind == "tmpfs":
            _make_mount_point(path, directory=True)
            _mount(libc, b"tmpfs", path, b"tmpfs", MS_NOSUID | MS_NODEV, COVER_OPTIONS)
            continue
        _make_mount_point(path, directory=stat.S_ISDIR(os.fstat(sources[path]).st_mode))
        _mount(libc, f"/proc/self/fd/{sources[path]}".encode(), path, None, MS_BIND | MS_REC, None)
        if kind == "ro":
            _mount(libc, None, path, None, MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV, None)
    for path, kind in ops:
        if kind == "tmpfs":
            _mount(libc, None, path, None, MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV, None)
    for fd in sources.values():
        os.close(fd)


def _make_mount_point(path: str, directory: bool) -> None:
    """Inside a fresh cover the mount point and the directories leading to it do not exist yet; they are
    made 0755 so the sandbox uid can pass."""
    if os.path.lexists(path):
        return
    parent = os.path.dirname(path)
    if not os.path.lexists(parent):
        _make_mount_point(parent, directory=True)
    if directory:
        os.mkdir(path)
        os.chmod(path, 0o755)
    else:
        os.close(os.open(path, os.O_CREAT | os.O_WRONLY | os.O_CLOEXEC, 0o644))


def _mount(libc: ctypes.CDLL, source: bytes | None, target: str, fstype: bytes | None, flags: int,
           data: bytes | None) -> None:
    if libc.mount(source, target.encode(), fstype, ctypes.c_ulong(flags), data) != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"mount of {target}: {os.strerror(errno)}")


def prepare(config: dict[str, Any]) -> None:
    join_cgroups(list(config.get("cgroups", [])))
    # Before the uid drop: afterwards the process is not dumpable and its /proc entries belong to root.
    if config.get("oom_victim"):
        prefer_as_oom_victim()
    if config.get("mounts"):
        apply_mounts([[str(path), str(kind)] for path, kind in config["mounts"]])
    if config.get("chdir"):
        os.chdir(str(config["chdir"]))  # through the new mounts: the old working directory may be covered
    if config.get("drop"):
        drop_privileges(int(config["uid"]), int(config["gid"]))
    apply_rlimits({str(k): v if isinstance(v, list) else int(v) for k, v in dict(config.get("rlimits", {})).items()})
    os.umask(int(config.get("umask", 0o022)))


def main(argv: list[str]) -> None:
    if len(argv) < 4 or argv[2] != "--":
        sys.stderr.write("usage: sandbox_init.py CONFIG_JSON -- ARGV...\n")
        os._exit(2)
    command = argv[3:]
    try:
        prepare(json.loads(argv[1]))
        os.execv(command[0], command)
    except (OSError, ValueError) as exc:
        sys.stderr.write(f"kernelgrade sandbox: cannot start {command[0]}: {exc}\n")
        sys.stderr.flush()
        os._exit(126)


if __name__ == "__main__":
    main(sys.argv)
