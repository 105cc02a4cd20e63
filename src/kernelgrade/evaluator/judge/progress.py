"""What the judge reports while it works: the stage, a message and, in loops, how far it got."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from kernelgrade.evaluator.result import Stage


@dataclass(frozen=True)
class Progress:
    stage: Stage
    message: str
    done: int = 0
    total: int = 0


ProgressFn = Callable[[Progress], None]
