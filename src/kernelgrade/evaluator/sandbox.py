"""Choosing a launcher by sandbox level name, and refusing to run below the operator's minimum."""

from __future__ import annotations

from kernelgrade.evaluator.launcher import Launcher, SubprocessLauncher

LEVELS = ("none", "unshare", "bwrap")


class SandboxUnavailable(Exception):
    """The requested (or required) isolation cannot be had on this machine."""


def make_launcher(name: str, minimum: str = "none") -> Launcher:
    if name not in ("auto", *LEVELS):
        raise SandboxUnavailable(f"unknown sandbox {name!r}; use one of auto, {', '.join(LEVELS)}")
    if minimum not in LEVELS:
        raise SandboxUnavailable(f"unknown minimum sandbox level {minimum!r}; use one of {', '.join(LEVELS)}")
    launcher: Launcher = SubprocessLauncher()
    if name not in ("auto", "none"):
        raise SandboxUnavailable(f"sandbox {name!r} is not available on this machine")
    if LEVELS.index(launcher.level) < LEVELS.index(minimum):
        raise SandboxUnavailable(f"the best sandbox here is {launcher.level!r}, below the required {minimum!r}")
    return launcher
