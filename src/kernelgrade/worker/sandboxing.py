"""The operator's sandbox settings turned into the launcher that starts every submission's children.

The one place where the policy lives, for `serve`, `worker` and `eval` alike: `auto` is the strongest
sandbox that works here (bwrap, else unshare), and no submission runs with no sandbox unless the operator
opted out explicitly (KERNELGRADE_ALLOW_UNSANDBOXED=1, with KERNELGRADE_SANDBOX=none). A refusal says what
to install or set.
"""

from __future__ import annotations

from kernelgrade.config import Settings
from kernelgrade.evaluator.sandbox.launcher import Launcher
from kernelgrade.evaluator.sandbox.levels import SandboxOptions, SandboxUnavailable, make_launcher
from kernelgrade.sandbox_policy import OPT_OUT


def settings_launcher(settings: Settings, sandbox: str | None = None) -> Launcher:
    """The launcher the settings ask for (`sandbox` overrides KERNELGRADE_SANDBOX); raises
    SandboxUnavailable with what to install or set where it cannot be had."""
    name = sandbox or settings.sandbox
    # The data dir holds the database and the caches, the work root every job's files; a child sees only its own
    # work and build dirs.
    options = SandboxOptions(hidden=(settings.data_dir, settings.work_root))
    try:
        return make_launcher(name, settings.sandbox_minimum, options, allow_unsandboxed=settings.allow_unsandboxed)
    except SandboxUnavailable as exc:
        raise SandboxUnavailable(f"{exc}. Only for code you trust, {OPT_OUT} runs submissions unsandboxed"
                                 f" (now KERNELGRADE_SANDBOX={name}, KERNELGRADE_SANDBOX_MINIMUM="
                                 f"{settings.sandbox_minimum}, KERNELGRADE_ALLOW_UNSANDBOXED="
                                 f"{int(settings.allow_unsandboxed)})") from exc
