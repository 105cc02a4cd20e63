"""Which host paths a sandboxed child sees, and how the rest of the host is kept out of its view.

bwrap starts every child on an empty root and binds, read-only at their own paths, only what `child_roots`
returns: the system's programs and libraries (/usr and the merged-/usr links), the interpreter's prefixes
and the site-packages directories in use, the compilers and the CUDA toolkit the child's environment names,
a few /etc entries that the dynamic linker, the compilers and Python read, and on a GPU the driver's
libraries and /sys. The host's /etc (passwd, hosts, ssh keys...), homes, /var, /srv, /opt (except a
toolchain living there), /run's sockets and the data dir are simply absent.

The unshare fallback keeps the host's tree but uses the same covers (`covered_ops`): a tmpfs over homes, the
data dir and socket directories, with exactly the interpreter prefix, the work dir and the build dir bound
back. `describe_roots` lists the view for a health page or a log line.
"""

from __future__ import annotations

import functools
import glob
import importlib.util
import os
import shutil
import stat
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

# The system's programs, libraries and headers. On merged-/usr systems the top-level ones are symlinks into
# /usr, recreated as such; elsewhere they are directories, bound like /usr.
SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
# /etc entries a child needs: the dynamic linker's cache and configuration (CUDA's libraries are found
# through it), the alternatives links behind cc/c++, name-service switch and time zone for libc, and
# Debian's /etc/python3.X (the target of the system interpreter's sitecustomize.py link).
ETC_ENTRIES = ("ld.so.cache", "ld.so.conf", "ld.so.conf.d", "alternatives", "nsswitch.conf", "localtime",
               "python3*")
# Environment variables naming directories the child's compilers and libraries come from.
TOOL_DIR_VARIABLES = ("CUDA_HOME", "CUDA_PATH", "CUDA_ROOT", "CUDNN_HOME")
# Programs a build runs, looked up on the child's PATH; their directories join the view.
BUILD_TOOLS = ("c++", "g++", "gcc", "cc", "ninja", "nvcc")
# Of those (and CC, CXX), the compilers, whose whole installation joins the view: a compiler finds its own
# headers and helpers relative to where it is installed (gcc's lib/gcc/<target>/<version>/include holds
# stddef.h; a GPU host's CC=/opt/gcc/bin/gcc has them under /opt/gcc), and ninja's dependency records name
# those headers, so a build that cannot see them is redone and fails.
COMPILERS = ("c++", "g++", "gcc", "cc", "nvcc")
# The NVIDIA driver's user-space libraries (libcuda, libnvidia-*): a run child with a GPU needs them.
DRIVER_LIBRARY_PREFIXES = ("libcuda.so", "libnvidia-")
# Read by PyTorch's cpuinfo (processor counts and caches); without it PyTorch prints errors on import.
CPU_TOPOLOGY = (Path("/sys/devices/system/cpu"), Path("/sys/devices/system/node"))
# Host directories of local services' sockets (Postgres, MySQL, D-Bus, Docker): a unix socket can still
# be connected to through a read-only mount, so where the host tree shows through they are covered.
SOCKET_DIRS = (Path("/run"), Path("/var/run"))


@dataclass(frozen=True)
class Roots:
    """A child's view of the host: `paths` bound read-only at their own place, `links` as (target, path)."""

    paths: tuple[Path, ...]
    links: tuple[tuple[str, Path], ...]


def child_roots(env: Mapping[str, str], readable: Iterable[Path] = (), gpu: bool = False) -> Roots:
    """Everything a child started with `env` reads from the host, outermost paths only. A wanted path that
    is itself a symlink (/etc/localtime, a venv reached through a link) is bound at its real path and the
    link recreated, so the paths the child is given still resolve."""
    links = [(os.readlink(p), Path(p)) for p in SYSTEM_DIRS if os.path.islink(p)]
    wanted = [Path(p) for p in SYSTEM_DIRS if not os.path.islink(p)]
    wanted += [*etc_entries(), *readable, *python_roots(), *tool_roots(env)]
    wanted += [*driver_library_dirs(env), Path("/sys")] if gpu else CPU_TOPOLOGY
    paths = outermost(p for p in existing(wanted) if p != Path("/"))
    links += [(os.readlink(p), p) for p in wanted if p.is_absolute() and p.is_symlink() and not under_any(p, paths)]
    return Roots(tuple(paths), tuple(sorted(set(links), key=lambda link: str(link[1]))))


def describe_roots(roots: Roots) -> list[str]:
    return [str(p) for p in roots.paths] + [f"{path} -> {target}" for target, path in roots.links]


def etc_entries() -> list[Path]:
    return sorted(Path(p) for pattern in ETC_ENTRIES for p in glob.glob(f"/etc/{pattern}"))


def python_dirs() -> list[Path]:
    """Where the child's interpreter lives (a virtualenv and the Python it was made from)."""
    exe = Path(os.path.realpath(sys.executable))
    prefixes = [Path(p) for p in {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix}]
    return [*prefixes, exe.parent, Path(sys.executable).parent]


def python_roots() -> list[Path]:
    """The interpreter's prefixes, torch's installation and the site-packages directories in use. Other
    sys.path entries (the judge's working directory, a PYTHONPATH) are not the child's business."""
    roots = python_dirs()
    spec = importlib.util.find_spec("torch")
    if spec is not None and spec.submodule_search_locations:
        roots += [Path(p).parent for p in spec.submodule_search_locations]
    roots += [Path(p) for p in sys.path if Path(p).name in ("site-packages", "dist-packages")]
    return [p for p in roots if p.is_absolute()]


def tool_roots(env: Mapping[str, str]) -> list[Path]:
    """The toolchain the child's environment names: CUDA_HOME and the like, LD_LIBRARY_PATH, and the
    directories of the build programs found on its PATH (for a compiler, the whole installation around it)."""
    values = [env.get(name, "") for name in TOOL_DIR_VARIABLES] + env.get("LD_LIBRARY_PATH", "").split(":")
    roots = [Path(v) for v in values if v.startswith("/")]
    search = env.get("PATH", "")
    compilers = {*COMPILERS, env.get("CC", ""), env.get("CXX", "")}
    for tool in (*BUILD_TOOLS, env.get("CC", ""), env.get("CXX", "")):
        found = shutil.which(tool, path=search) if tool else None
        if found and os.path.isabs(found):
            real = Path(os.path.realpath(found))
            roots += [Path(found).parent, real.parent] + ([real.parent.parent] if tool in compilers else [])
    return [r for r in roots if r != Path("/")]


def driver_library_dirs(env: Mapping[str, str]) -> list[Path]:
    """Directories holding the NVIDIA driver's libraries: those the dynamic linker is configured to search
    or the child's LD_LIBRARY_PATH names, and those the judge itself loaded them from."""
    candidates = [*_linker_dirs(), *(Path(p) for p in env.get("LD_LIBRARY_PATH", "").split(":") if p)]
    found = [d for d in candidates if _holds_driver_libraries(d)]
    return found + _mapped_driver_dirs()


@functools.lru_cache(maxsize=1)
def _linker_dirs() -> tuple[Path, ...]:
    return tuple(_conf_dirs(Path("/etc/ld.so.conf"), depth=0))


def _conf_dirs(conf: Path, depth: int) -> list[Path]:
    try:
        lines = conf.read_text(errors="replace").splitlines()
    except OSError:
        return []
    dirs: list[Path] = []
    for line in (raw.split("#", 1)[0].strip() for raw in lines):
        if line.startswith("include ") and depth < 4:  # includes nest only a level or two in practice
            dirs += [d for inc in sorted(glob.glob(line.split(None, 1)[1])) for d in _conf_dirs(Path(inc), depth + 1)]
        elif line.startswith("/"):
            dirs.append(Path(line))
    return dirs


def _holds_driver_libraries(directory: Path) -> bool:
    try:
        return any(name.startswith(DRIVER_LIBRARY_PREFIXES) for name in os.listdir(directory))
    except OSError:
        return False


def _mapped_driver_dirs() -> list[Path]:
    try:
        maps = Path("/proc/self/maps").read_text(errors="replace").splitlines()
    except OSError:
        return []
    paths = {Path(line.split(None, 5)[5]) for line in maps if len(line.split(None, 5)) == 6}
    return sorted({p.parent for p in paths if p.name.startswith(DRIVER_LIBRARY_PREFIXES)})


def existing(paths: Iterable[Path]) -> list[Path]:
    """The real paths of those that exist (directories or files)."""
    resolved = {Path(os.path.realpath(p)) for p in paths}
    return sorted(p for p in resolved if p.exists())


def under_any(path: Path, roots: Sequence[Path]) -> bool:
    return any(path == r or r in path.parents for r in roots)


def outermost(paths: Iterable[Path]) -> list[Path]:
    """The paths not inside another of them: binding or covering a directory includes what is inside it."""
    unique = sorted(set(paths), key=lambda p: (len(p.parts), str(p)))
    kept: list[Path] = []
    for path in unique:
        if not under_any(path, kept):
            kept.append(path)
    return kept


def home_dirs() -> list[Path]:
    """The judge's home (keys, credentials, shell history): covered like the shared directories."""
    try:
        return [Path.home()]
    except (RuntimeError, KeyError):
        return []


def unreachable_ancestors(paths: Iterable[Path], uid: int, gid: int) -> set[Path]:
    """For each path, the topmost directory above it that `uid` may not pass through (a root judge's 0700
    home holding the interpreter, say). Covering it and binding the path back gives the child a way in
    without opening the rest of that directory."""
    found: set[Path] = set()
    for path in paths:
        for ancestor in reversed(path.parents[:-1]):  # from just below / down to the parent
            if not _traversable(ancestor, uid, gid):
                found.add(ancestor)
                break
    return found


def _traversable(directory: Path, uid: int, gid: int) -> bool:
    info = directory.stat()
    if info.st_uid == uid:
        return bool(info.st_mode & stat.S_IXUSR)
    if info.st_gid == gid:
        return bool(info.st_mode & stat.S_IXGRP)
    return bool(info.st_mode & stat.S_IXOTH)


def covered_ops(covers: Sequence[Path], readable: Sequence[Path], writable: Sequence[Path],
                tmpfs_roots: Sequence[Path]) -> list[tuple[Path, str]]:
    """The mounts that cover, then bind back, in order of depth so that deeper mounts land on top: each a
    (path, "tmpfs" | "rw" | "ro"). A readable path is bound only where a cover or tmpfs would hide it."""
    ops = [(p, "tmpfs") for p in covers] + [(p, "rw") for p in writable]
    ops += [(p, "ro") for p in readable if under_any(p, [*covers, *tmpfs_roots]) and p not in writable]
    return sorted(ops, key=lambda op: (len(op[0].parts), op[1] != "tmpfs"))
