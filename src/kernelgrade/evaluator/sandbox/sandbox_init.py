"""The last step before a sandboxed child: `python -I -S sandbox_init.py CONFIG -- ARGV...`.

It joins the child's cgroups, drops to the sandbox uid, sets resource limits and makes itself the first
victim of the kernel's OOM killer, then replaces itself with ARGV. Launchers run it twice: outside the
namespaces to join cgroups (only the judge can write there), and inside them for the rest (so that
RLIMIT_NPROC counts the sandbox's own uid). Doing this in a helper process keeps subprocess.Popen free of
preexec_fn, which is unsafe in the judge's threaded process.

It is run as a script, not imported: the standard library only, nothing from the package.
"""

from __future__ import annotations

import json
import os
import resource
import sys
from typing import Any

# The kernel's OOM killer picks the process with the highest score; 1000 makes the child its first choice
# over the judge, the database and other children, which is what protects the host where no memory
# cgroup exists.
OOM_SCORE_ADJ = "1000"


def join_cgroups(procs_files: list[str]) -> None:
    for path in procs_files:
        with open(path, "w") as handle:
            handle.write("0")  # 0: the writing process itself


def drop_privileges(uid: int, gid: int) -> None:
    os.setgroups([])
    os.setresgid(gid, gid, gid)
    os.setresuid(uid, uid, uid)


def apply_rlimits(limits: dict[str, int]) -> None:
    for name, value in limits.items():
        which = getattr(resource, name)
        _, hard = resource.getrlimit(which)
        # Only lowering is possible without privilege; never ask for more than the current hard limit.
        capped = value if hard == resource.RLIM_INFINITY else min(value, hard)
        resource.setrlimit(which, (capped, capped))


def prefer_as_oom_victim() -> None:
    try:
        with open("/proc/self/oom_score_adj", "w") as handle:
            handle.write(OOM_SCORE_ADJ)
    except OSError:
        pass  # no /proc here (the outer step may run before one is mounted); the cgroup still applies


def prepare(config: dict[str, Any]) -> None:
    join_cgroups(list(config.get("cgroups", [])))
    # Before the uid drop: afterwards the process is not dumpable and its /proc entries belong to root.
    if config.get("oom_victim"):
        prefer_as_oom_victim()
    if config.get("drop"):
        drop_privileges(int(config["uid"]), int(config["gid"]))
    apply_rlimits({str(k): int(v) for k, v in dict(config.get("rlimits", {})).items()})
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
