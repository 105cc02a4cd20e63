"""The operator's sandbox settings turned into the launcher that starts every submission's children.

The one place where the policy lives, for `serve`, `worker` and `eval` alike: `auto` is the strongest
sandbox that works here (bwrap, else unshare), and no submission runs with no sandbox unless the operator
opted out explicitly (KERNELGRADE_ALLOW_UNSANDBOXED=1, with KERNELGRADE_SANDBOX=none). A refusal says what
to install or set. Whatever then runs unsandboxed is marked on every result, page and command line
(`UNSANDBOXED_WARNING`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kernelgrade.config import Settings

if TYPE_CHECKING:
    from kernelgrade.evaluator.sandbox.launcher import Launcher

OPT_OUT = "KERNELGRADE_SANDBOX=none KERNELGRADE_ALLOW_UNSANDBOXED=1"
UNSANDBOXED_WARNING = ("UNSANDBOXED: this submission ran with no sandbox; it could read what the grader's user"
                       " can read and reach local servers. Use only for code you trust.")


def settings_launcher(settings: Settings, sandbox: str | None = None) -> Launcher:
    """The launcher the settings ask for (`sandbox` overrides KERNELGRADE_SANDBOX); raises
    SandboxUnavailable with what to install or set where it cannot be had."""
    # Here, not at the top: the pages and the API read the warning below without importing the evaluator.
    from kernelgrade.evaluator.sandbox.levels import SandboxOptions, SandboxUnavailable, make_launcher

    name = sandbox or settings.sandbox
    # The data dir holds the database and every job's files; a child sees only its own work and build dirs.
    options = SandboxOptions(hidden=(settings.data_dir,))
    try:
        return make_launcher(name, settings.sandbox_minimum, options, allow_unsandboxed=settings.allow_unsandboxed)
    except SandboxUnavailable as exc:
        raise SandboxUnavailable(f"{exc}. Only for code you trust, {OPT_OUT} runs submissions unsandboxed"
                                 f" (now KERNELGRADE_SANDBOX={name}, KERNELGRADE_SANDBOX_MINIMUM="
                                 f"{settings.sandbox_minimum}, KERNELGRADE_ALLOW_UNSANDBOXED="
                                 f"{int(settings.allow_unsandboxed)})") from exc


def unsandboxed(sandbox_level: str | None) -> bool:
    """True for a result that ran with no isolation (its environment's sandbox level)."""
    return sandbox_level == "none"
