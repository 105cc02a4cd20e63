"""What the sandboxing launchers share: who the child runs as, the helper steps, limits and cgroups.

Who the child runs as:
- The judge is root: each child switches to a real unprivileged uid of its own (allocated from a range no
  account uses) before it runs. Its own uid makes RLIMIT_NPROC a per-child limit (a fork bomb cannot use
  up the process budget of other jobs' children) and keeps concurrent children out of each other's work
  dirs. All share one group (nogroup, 65534), which owns the compile cache's build dirs with group write,
  so that the run child of a later job can use a build made by an earlier compile child. A uid namespace
  mapping the child onto root would instead leave it the owner of every root-owned file (it could read
  /etc/shadow and rewrite the judge's code wherever a mount is writable) and exempt it from RLIMIT_NPROC,
  which the kernel never enforces for the host's root.
- The judge is not root: the child runs under a user namespace as uid 65534 inside, which is the judge's
  own uid outside; RLIMIT_NPROC is set inside that namespace, so it counts the sandbox's processes only.
"""

from __future__ import annotations

import itertools
import json
import os
import stat
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from kernelgrade.evaluator.sandbox.cgroups import CgroupSupport, ChildCgroup
from kernelgrade.evaluator.sandbox.cpus import on_cpus
from kernelgrade.evaluator.sandbox.launcher import ChildSpec, GiB

HELPER = Path(__file__).resolve().with_name("sandbox_init.py")
NOBODY = 65534
# Per-child uids of a root judge: far above accounts and the subordinate-id ranges containers use
# (100000 and up, 65536 each), below 2**31, where some tools misread ids as negative.
UID_BASE = 1_900_000_000
UID_SPAN = 1 << 24
_uid_counter = itertools.count()
# How far RLIMIT_CPU's hard limit lies above its soft one. Past the soft limit the kernel sends SIGXCPU once a
# second, which ends a child at once unless it ignores the signal; five of them ignored is a child that will
# not stop, and SIGKILL ends it.
CPU_KILL_AFTER_S = 5


@dataclass(frozen=True)
class SandboxOptions:
    """How a deployment wants its sandbox; every field has a default that works without configuration."""

    bwrap: str | None = None  # the bwrap executable; None: the one on PATH
    unshare: str | None = None  # util-linux unshare; None: the one on PATH
    uid: int | None = None  # None: a fresh uid per child (root judge) or 65534 inside a user namespace
    gid: int = NOBODY
    # Directories no child may see, besides each spec's own hidden ones: the data dir (database, other
    # jobs), secrets. Each child still sees its own work dir and build dir inside them.
    hidden: tuple[Path, ...] = ()
    memory_bytes: int | None = None  # None: default_memory_bytes()
    # A lower RLIMIT_FSIZE than each spec's own (ResourceLimits.file_bytes), for tests of outputs larger
    # than a file may be. None: the spec's.
    file_bytes: int | None = None
    processes: int | None = None  # None: default_processes()
    cgroup_root: Path | None = None  # a delegated cgroup v2 directory; None: find one
    use_cgroups: bool = True


def default_memory_bytes() -> int:
    """Half the machine's RAM: one runaway child cannot starve the judge, the database or the other
    children, while an honest CPU problem or a parallel build of a big extension still fits."""
    total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    return max(2 * GiB, total // 2)


def default_processes() -> int:
    """Threads count too: PyTorch starts up to two pools of one thread per core, a build runs MAX_JOBS
    compilers of a few processes each. Four per core plus 128 covers both with room to spare, and stops a
    fork bomb long before the kernel's pid table (32768 by default) is in danger."""
    return 128 + 4 * (os.cpu_count() or 1)


@dataclass(frozen=True)
class Identity:
    uid: int
    gid: int
    drop: bool  # the judge is root: the child must switch to uid/gid itself


def identity(options: SandboxOptions) -> Identity:
    """Who the next child runs as; each call of a root judge gives a new uid."""
    if os.geteuid() != 0:
        return Identity(NOBODY if options.uid is None else options.uid, options.gid, drop=False)
    uid = options.uid if options.uid is not None else next_uid()
    return Identity(uid, options.gid, drop=True)


def describe_user(options: SandboxOptions) -> str:
    if os.geteuid() != 0:
        return f"user: uid {options.uid or NOBODY} in a user namespace (the judge's uid outside)"
    if options.uid is not None:
        return f"user: uid {options.uid} (a real unprivileged uid; the judge is root)"
    return f"user: a uid of its own per child, from {UID_BASE} (the judge is root)"


def next_uid() -> int:
    # The pid keeps the judges of one host apart; a rare collision only makes two children share a budget.
    return UID_BASE + ((os.getpid() << 10) + next(_uid_counter)) % UID_SPAN


def helper_argv(config: dict[str, object], argv: Sequence[str]) -> list[str]:
    # -I: the helper ignores PYTHON* variables and user site-packages; -S: no site import, a fast start.
    return [sys.executable, "-I", "-S", str(HELPER), json.dumps(config, sort_keys=True), "--", *argv]


def inner_config(who: Identity, spec: ChildSpec, options: SandboxOptions) -> dict[str, object]:
    limits = spec.limits
    rlimits: dict[str, int | list[int]] = {"RLIMIT_NOFILE": limits.open_files,
                                           "RLIMIT_FSIZE": file_bytes_for(spec, options), "RLIMIT_CORE": 0,
                                           "RLIMIT_NPROC": processes_for(spec, options)}
    if limits.cpu_seconds is not None:
        # Soft below hard: the kernel sends SIGXCPU at the soft limit (a signal that names the cause) and
        # SIGKILL only at the hard one, which a soft limit equal to it would make the first and only signal.
        rlimits["RLIMIT_CPU"] = [limits.cpu_seconds, limits.cpu_seconds + CPU_KILL_AFTER_S]
    # umask 002 for a root judge's children: their builds must stay writable to the shared group.
    umask = 0o002 if who.drop else 0o022
    return {"drop": who.drop, "uid": who.uid, "gid": who.gid, "rlimits": rlimits, "oom_victim": True,
            "umask": umask}


def processes_for(spec: ChildSpec, options: SandboxOptions) -> int:
    return spec.limits.processes or options.processes or default_processes()


def file_bytes_for(spec: ChildSpec, options: SandboxOptions) -> int:
    return min(spec.limits.file_bytes, options.file_bytes or spec.limits.file_bytes)


def memory_for(spec: ChildSpec, options: SandboxOptions) -> int:
    return spec.limits.memory_bytes or options.memory_bytes or default_memory_bytes()


def hand_over(work_dir: Path, shared: Sequence[Path], who: Identity) -> None:
    """Give a root judge's child its work dir, and the sandbox group write access to the shared build
    dirs (entries made by an unsandboxed launcher lack it). Other jobs' children may be using those dirs
    right now, so they are walked by descriptor and never through a link: a symlink or a hard link
    planted there must not make the judge give away a file outside."""
    if not who.drop:
        return
    os.lchown(work_dir, who.uid, who.gid)
    for top in shared:
        _share_at(None, str(top), who.gid)
        for _root, dirs, files, dir_fd in os.fwalk(top, follow_symlinks=False):
            for name in dirs + files:
                _share_at(dir_fd, name, who.gid)


def _share_at(dir_fd: int | None, name: str, gid: int) -> None:
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=dir_fd)
    except OSError:
        return  # a symlink (ELOOP), or gone meanwhile
    try:
        info = os.fstat(fd)
        is_dir = stat.S_ISDIR(info.st_mode)
        if not (is_dir or (stat.S_ISREG(info.st_mode) and info.st_nlink == 1)):
            return
        wanted = stat.S_IRGRP | stat.S_IWGRP | (stat.S_IXGRP | stat.S_ISGID if is_dir else 0)
        if info.st_gid != gid:
            os.fchown(fd, -1, gid)
        if info.st_mode & wanted != wanted:
            os.fchmod(fd, stat.S_IMODE(info.st_mode) | wanted)
    finally:
        os.close(fd)


class SandboxedPopen(subprocess.Popen[bytes]):
    """A child with its cgroups, released once the child has been reaped.

    bwrap reports a sandboxed process killed by signal N as its own exit status 128 + N; with
    `signal_statuses` set, such a status reads as Popen's usual -N, so a crash is named by its signal.
    """

    cgroup: ChildCgroup | None = None
    signal_statuses = False

    def wait(self, timeout: float | None = None) -> int:
        super().wait(timeout)
        return self._reaped()

    def poll(self) -> int | None:
        return None if super().poll() is None else self._reaped()

    def _reaped(self) -> int:
        if self.cgroup is not None:
            self.cgroup.release()
            self.cgroup = None
        if self.signal_statuses and 128 < self.returncode <= 128 + 64:
            self.returncode = 128 - self.returncode
        return self.returncode


def start(argv: Sequence[str], spec: ChildSpec, env: dict[str, str], support: CgroupSupport | None,
          options: SandboxOptions, signal_statuses: bool = False, pass_fds: Sequence[int] = ()) -> SandboxedPopen:
    """Start argv in its own process group, inside fresh cgroups joined before anything else runs;
    `pass_fds` stay open in it (data the launcher hands over), every other descriptor is closed."""
    cgroup = ChildCgroup(support, memory_for(spec, options), processes_for(spec, options)) if support else None
    if cgroup is not None and cgroup.dirs:
        argv = helper_argv({"cgroups": cgroup.procs_files}, argv)
    try:
        with on_cpus(spec.cpus):
            proc = SandboxedPopen(list(argv), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  cwd=spec.work_dir, env=env, start_new_session=True, close_fds=True,
                                  pass_fds=tuple(pass_fds))
    except BaseException:
        if cgroup is not None:
            cgroup.release()
        raise
    proc.cgroup = cgroup
    proc.signal_statuses = signal_statuses
    return proc
