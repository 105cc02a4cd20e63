"""What every part of kernelgrade says about a submission that ran with no sandbox.

No submission runs unsandboxed unless the operator opted out explicitly (`OPT_OUT`; worker/sandboxing.py
turns the settings into a launcher). Whatever then runs unsandboxed is marked on every result, page and
command line (`UNSANDBOXED_WARNING`).
"""

from __future__ import annotations

OPT_OUT = "KERNELGRADE_SANDBOX=none KERNELGRADE_ALLOW_UNSANDBOXED=1"
UNSANDBOXED_WARNING = ("UNSANDBOXED: this submission ran with no sandbox; it could read what the grader's user"
                       " can read and reach local servers. Use only for code you trust.")


def unsandboxed(sandbox_level: str | None) -> bool:
    """True for a result that ran with no isolation (its environment's sandbox level)."""
    return sandbox_level == "none"
