"""The compile child's exchange: one CompileRequest in, one CompileReply out, each a JSON line written and read
with the strict Codec(), as the run child's protocol is. The judge (judge/compile.py) turns a reply that
does not decode into the same failure as a child that died; the child (child/compile_child.py) exits on a
request that does not decode, which the judge sees as such a death.

A compile child that reaches its CPU-time limit (RLIMIT_CPU's soft limit, which sends SIGXCPU) exits at once with
CPU_LIMIT_STATUS; the judge names that a timeout, as it does a child killed by SIGXCPU itself.
"""

from __future__ import annotations

import signal
from dataclasses import dataclass, field
from pathlib import Path

from kernelgrade.evaluator.wire.prebuilt import Prebuilt

# The child's SIGXCPU handler is _exit itself, which the kernel calls with the signal's number: a handler of C,
# not of Python, so it ends the process whatever thread or C call it is in. A handler at all, not the default
# action, because a pid namespace's first process (the child, under the unshare sandbox) ignores a signal it
# has left at its default.
CPU_LIMIT_STATUS = int(signal.SIGXCPU)


@dataclass(frozen=True)
class CompileRequest:
    submission: Path
    init_inputs: Path
    seed: int
    # Precompiled-header variant name (pch_variants.py) -> the read-only dir holding its torch/extension.h.gch.
    pch: dict[str, str] = field(default_factory=dict)
    lean: bool = False  # try CUDA sources without torch/extension.h first (child/lean_header.py)


@dataclass(frozen=True)
class BuildRecord:
    """One load/load_inline call the submission made, whether or not the submission caught its error."""

    name: str
    ok: bool
    error: str = ""
    prebuilt: Prebuilt | None = None  # where a load_inline build landed, for the run child to import


@dataclass(frozen=True)
class CompileReply:
    builds: tuple[BuildRecord, ...]
    import_error: str  # a traceback from importing or constructing ModelNew ("" if none), left to the run child
    pch_missed: tuple[str, ...]  # PCH variants calls wanted and did not find, for the judge to build

    @property
    def failed(self) -> tuple[BuildRecord, ...]:
        return tuple(b for b in self.builds if not b.ok)
