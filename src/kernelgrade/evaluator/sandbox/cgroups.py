"""Per-child cgroups that cap memory and processes, where the host lets the judge make them.

cgroup v2: child groups go under a directory that delegates the memory and pids controllers: the
operator's `cgroup_root` (for example one made with systemd's Delegate=yes), or the judge's own cgroup
when the controllers can be enabled there (only possible where no process sits in it, e.g. the root).
cgroup v1: a child group in the memory and in the pids hierarchy, under the judge's own group in each.
Where neither works the caps are recorded as unavailable; sandbox_init.py's OOM score is then what keeps
the kernel's OOM killer off the judge.

The child joins its groups through sandbox_init.py before anything of it runs, so no process of the
sandbox ever starts outside them.
"""

from __future__ import annotations

import atexit
import contextlib
import itertools
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

# After a kill the group holds dying processes for a moment; removing it is retried for this long.
RELEASE_WAIT_S = 2.0
CONTROLLERS = ("memory", "pids")


@dataclass(frozen=True)
class CgroupSupport:
    """Where child groups can be made: one parent directory per controller, or None with the reason."""

    version: str
    memory_parent: Path | None
    pids_parent: Path | None
    reason: str = ""

    def describe(self) -> str:
        if self.memory_parent is None and self.pids_parent is None:
            return f"cgroups unavailable: {self.reason}"
        have = [c for c, p in zip(CONTROLLERS, (self.memory_parent, self.pids_parent), strict=True) if p]
        note = f" ({self.reason})" if self.reason else ""
        return f"cgroup {self.version}: {', '.join(have)}{note}"


@dataclass(frozen=True)
class _Mount:
    root: str
    point: Path
    fstype: str
    options: frozenset[str]


def _mounts() -> list[_Mount]:
    mounts = []
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        left, _, right = line.partition(" - ")
        fields, tail = left.split(), right.split()
        if len(fields) >= 5 and len(tail) >= 3:
            mounts.append(_Mount(fields[3], Path(fields[4]), tail[0], frozenset(tail[2].split(","))))
    return mounts


def _own_paths() -> dict[str, str]:
    """The judge's group per v1 controller, and under the key "" its v2 group."""
    paths: dict[str, str] = {}
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        _, controllers, path = line.split(":", 2)
        for name in controllers.split(",") if controllers else [""]:
            paths[name] = path
    return paths


def _directory(mount: _Mount, path: str) -> Path | None:
    root = mount.root.rstrip("/")
    if path != root and not path.startswith(root + "/"):
        return None  # our group is outside what this mount shows
    return mount.point / path[len(root):].lstrip("/")


def _make_parent(base: Path) -> Path:
    _sweep_stale(base)
    parent = base / f"kernelgrade-{os.getpid()}"
    parent.mkdir(exist_ok=True)
    atexit.register(_remove_tree, parent)
    return parent


def _v1_parent(controller: str) -> Path:
    own = _own_paths().get(controller)
    for mount in _mounts():
        if mount.fstype == "cgroup" and controller in mount.options and own is not None:
            base = _directory(mount, own)
            if base is not None and (base / "cgroup.procs").exists():
                return _make_parent(base)
    raise OSError(f"no writable cgroup v1 {controller} hierarchy")


def _probe_v1() -> CgroupSupport:
    parents: list[Path | None] = []
    reasons = []
    for controller in CONTROLLERS:
        try:
            parents.append(_v1_parent(controller))
        except OSError as exc:
            parents.append(None)
            reasons.append(f"{controller}: {exc.strerror or exc}")
    return CgroupSupport("v1", parents[0], parents[1], "; ".join(reasons))


def _enable_controllers(directory: Path) -> None:
    enabled = (directory / "cgroup.subtree_control").read_text().split()
    missing = [c for c in CONTROLLERS if c not in enabled]
    if missing:
        (directory / "cgroup.subtree_control").write_text(" ".join(f"+{c}" for c in missing))


def _probe_v2(cgroup_root: Path | None) -> CgroupSupport:
    base = cgroup_root
    if base is None:
        own = _own_paths().get("")
        mount = next((m for m in _mounts() if m.fstype == "cgroup2"), None)
        base = _directory(mount, own) if mount is not None and own is not None else None
    if base is None:
        return CgroupSupport("v2", None, None, "no cgroup v2 hierarchy holds the judge")
    available = (base / "cgroup.controllers").read_text().split()
    if not all(c in available for c in CONTROLLERS):
        return CgroupSupport("v2", None, None, f"{base} does not offer the memory and pids controllers")
    _enable_controllers(base)
    parent = _make_parent(base)
    _enable_controllers(parent)
    return CgroupSupport("v2", parent, parent)


_cache: dict[Path | None, CgroupSupport] = {}
_cache_lock = threading.Lock()


def probe(cgroup_root: Path | None = None) -> CgroupSupport:
    """Find (once per process) where this judge can make child groups."""
    with _cache_lock:
        if cgroup_root not in _cache:
            _cache[cgroup_root] = _probe(cgroup_root)
        return _cache[cgroup_root]


def _probe(cgroup_root: Path | None) -> CgroupSupport:
    errors = []
    attempts: tuple[Callable[[], CgroupSupport], ...] = (lambda: _probe_v2(cgroup_root), _probe_v1)
    for attempt in attempts:
        try:
            support = attempt()
        except OSError as exc:
            errors.append(f"{exc.strerror or exc}{f' ({exc.filename})' if exc.filename else ''}")
            continue
        if support.memory_parent or support.pids_parent:
            return support
        errors.append(support.reason)
    return CgroupSupport("", None, None, "; ".join(e for e in errors if e) or "no cgroup hierarchy found")


class ChildCgroup:
    """One child's groups, with its memory and process caps; removed once its processes are gone."""

    _names = itertools.count()

    def __init__(self, support: CgroupSupport, memory_bytes: int, processes: int) -> None:
        name = f"child-{next(self._names)}"
        settings: dict[Path, dict[str, str]] = {}
        if support.memory_parent is not None:
            settings.setdefault(support.memory_parent / name, {}).update(_memory_settings(support.version,
                                                                                          memory_bytes))
        if support.pids_parent is not None:
            settings.setdefault(support.pids_parent / name, {})["pids.max"] = str(processes)
        self.dirs: list[Path] = []
        for directory, values in settings.items():
            self._make(directory, values)

    def _make(self, directory: Path, settings: dict[str, str]) -> None:
        directory.mkdir()
        self.dirs.append(directory)
        for key, value in settings.items():
            if (directory / key).exists():
                (directory / key).write_text(value)

    @property
    def procs_files(self) -> list[str]:
        return [str(d / "cgroup.procs") for d in self.dirs]

    def release(self) -> None:
        deadline = time.monotonic() + RELEASE_WAIT_S
        for directory in self.dirs:
            while directory.exists():
                try:
                    directory.rmdir()
                except OSError:
                    if time.monotonic() > deadline:
                        break  # left for the exit-time sweep
                    time.sleep(0.02)


def _memory_settings(version: str, memory_bytes: int) -> dict[str, str]:
    """Ordered: a v1 memory+swap limit may not be set below the memory limit."""
    if version == "v2":
        # swap.max 0: a capped child must not page the host into the ground instead of being killed;
        # oom.group 1: an OOM kills the whole sandbox, not one thread of it.
        return {"memory.max": str(memory_bytes), "memory.swap.max": "0", "memory.oom.group": "1"}
    return {"memory.limit_in_bytes": str(memory_bytes), "memory.memsw.limit_in_bytes": str(memory_bytes)}


def _sweep_stale(base: Path) -> None:
    """Remove the groups of judges that died without their exit-time cleanup (killed, say)."""
    for parent in base.glob("kernelgrade-*"):
        pid = parent.name.removeprefix("kernelgrade-")
        if pid.isdigit() and not Path(f"/proc/{pid}").exists():
            _remove_tree(parent)


def _remove_tree(parent: Path) -> None:
    with contextlib.suppress(OSError):
        for child in parent.iterdir():
            if child.is_dir():
                with contextlib.suppress(OSError):
                    child.rmdir()
        parent.rmdir()
