"""The fallback sandbox where bubblewrap is missing: util-linux `unshare`.

The child gets new pid (with its own /proc), network, mount, ipc and uts namespaces, an unprivileged uid
(isolation.py), the same resource limits and cgroups as under bwrap, and dies with unshare (--kill-child),
so the judge's group kill reaches everything inside. What it lacks next to bwrap: the filesystem is the
host's, guarded only by the child's uid. A root judge's child has a uid of its own, so it can write only
world-writable places and its own dirs, and it cannot enter other jobs' work dirs (mode 0700), but it can
read whatever is world-readable, and the interpreter must be reachable by that uid (not under a 0700
home; the probe says so where it is not). A non-root judge's child has the judge's own file access. Every
GPU's device node stays visible: only CUDA_VISIBLE_DEVICES narrows what the child uses.
"""

from __future__ import annotations

import os
import shutil

from kernelgrade.evaluator.sandbox import cgroups
from kernelgrade.evaluator.sandbox.isolation import (
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
        args += ["--", *helper_argv(inner_config(who, spec, self.options), spec.argv)]
        return start(args, spec, child_environment(spec, os.environ), self.cgroups, self.options)

    def features(self) -> tuple[str, ...]:
        memory = self.cgroups.describe() if self.cgroups else "cgroups disabled by the operator"
        return (f"unshare {self.unshare}", "network: none", "filesystem: the host's, guarded by uid only",
                describe_user(self.options), memory, "rlimits: NOFILE, FSIZE, CORE=0, NPROC, CPU for builds")
