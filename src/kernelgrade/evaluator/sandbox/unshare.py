"""The fallback sandbox where bubblewrap is missing: util-linux `unshare`.

The child gets new pid (with its own /proc), network, mount, ipc and uts namespaces, an unprivileged uid
(isolation.py), the same resource limits and cgroups as under bwrap, and dies with unshare (--kill-child),
so the judge's group kill reaches everything inside. What it lacks next to bwrap: the filesystem is the
host's, guarded by the child's uid. A root judge's child has a uid of its own, so it can write only
world-writable places and its own dirs, and it cannot enter other jobs' work dirs (mode 0700). In its
mount namespace the helper also covers the judge's home, the data dir and the socket directories with
empty tmpfs and binds back exactly what the child needs there (the interpreter prefix under a 0700 home,
its work and build dirs), as bwrap does; anything else world-readable stays readable. A non-root judge
cannot mount: its child has the judge's own file access. Every GPU's device node stays visible: only
CUDA_VISIBLE_DEVICES narrows what the child uses.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from kernelgrade.evaluator.sandbox import cgroups
from kernelgrade.evaluator.sandbox.child_roots import (
    SOCKET_DIRS,
    covered_ops,
    existing,
    home_dirs,
    outermost,
    python_roots,
    tool_roots,
    unreachable_ancestors,
)
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


class UnshareMissing(Exception):
    """No unshare executable was given or found on PATH."""


class UnshareLauncher:
    level = "unshare"

    def __init__(self, unshare: str | None = None, options: SandboxOptions | None = None) -> None:
        self.options = options or SandboxOptions()
        found = unshare or self.options.unshare or shutil.which("unshare")
        if not found:
            raise UnshareMissing("unshare (util-linux) is not on PATH")
        self.unshare = found
        self.cgroups = cgroups.probe(self.options.cgroup_root) if self.options.use_cgroups else None

    def popen(self, spec: ChildSpec) -> SandboxedPopen:
        who = identity(self.options)
        hand_over(spec.work_dir, spec.writable, who)
        args = [self.unshare, "--fork", "--kill-child", "--pid", "--mount-proc", "--net", "--ipc", "--uts",
                "--propagation", "private"]
        if not who.drop:
            # Unprivileged: a user namespace is what allows the others; the judge's uid becomes 65534 inside.
            args += [f"--map-user={who.uid}", f"--map-group={who.gid}"]
        config = inner_config(who, spec, self.options)
        if who.drop:
            config.update(mounts=[[str(p), kind] for p, kind in self.mounts(spec, who)], chdir=str(spec.work_dir))
        args += ["--", *helper_argv(config, spec.argv)]
        return start(args, spec, child_environment(spec, os.environ), self.cgroups, self.options,
                     pass_fds=spec.shared_fds)

    def mounts(self, spec: ChildSpec, who: Identity) -> list[tuple[Path, str]]:
        """A root judge's covers and bind-backs (child_roots.covered_ops), applied by the helper as root
        inside the child's mount namespace before it drops to the sandbox uid."""
        readable = existing([*spec.readable, *python_roots(), *tool_roots(spec.env)])
        writable = existing([spec.work_dir, *spec.writable])
        wanted = {*self.options.hidden, *spec.hidden, *SOCKET_DIRS, *home_dirs(),
                  *unreachable_ancestors([*readable, *writable], who.uid, who.gid)}
        covers = outermost(p for p in existing(wanted) if p != Path("/"))
        return covered_ops(covers, readable, writable, [])

    def features(self) -> tuple[str, ...]:
        memory = self.cgroups.describe() if self.cgroups else "cgroups disabled by the operator"
        files = ("filesystem: the host's, guarded by uid; homes, data dir and sockets covered" if os.geteuid() == 0
                 else "filesystem: the host's, with the judge's own access")
        return (f"unshare {self.unshare}", "network: none", files,
                describe_user(self.options), memory, "rlimits: NOFILE, FSIZE, CORE=0, NPROC, CPU for builds")
