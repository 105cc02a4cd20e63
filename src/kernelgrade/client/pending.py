"""The bookkeeping of `as_completed`: which submissions are still being graded, which to wait for next and
for how long, and when the caller's patience runs out."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable

from kernelgrade.client.calls import WAIT_S, groups
from kernelgrade.service.schemas import SubmissionLimitsOut, SubmissionOut

# Where all the ids fit in one request, each wait is WAIT_S long. Where they do not (more ids than a request
# carries), each group is waited for this long in turn, so that a finished submission in one group is not held
# up behind a long wait on another: it is seen within a second per group.
TURN_WAIT_S = 1.0


class Pending:
    def __init__(self, ids: Iterable[int], limits: SubmissionLimitsOut, timeout_s: float | None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.ids = list(dict.fromkeys(ids))
        self.limits, self.timeout_s, self.clock = limits, timeout_s, clock
        self.deadline = None if timeout_s is None else clock() + timeout_s
        self.turn = 0

    def __bool__(self) -> bool:
        return bool(self.ids)

    def next_wait(self) -> tuple[list[int], float]:
        """The ids of the next wait and its timeout; TimeoutError once the caller's timeout has passed."""
        waits = groups(self.ids, self.limits.max_ids)
        ids = waits[self.turn % len(waits)]
        self.turn += 1
        timeout_s = min(WAIT_S if len(waits) == 1 else TURN_WAIT_S, self.limits.max_wait_s)
        if self.deadline is None:
            return ids, timeout_s
        left = self.deadline - self.clock()
        if left <= 0:
            shown = ", ".join(str(i) for i in self.ids[:10]) + (" ..." if len(self.ids) > 10 else "")
            raise TimeoutError(f"{len(self.ids)} submission(s) still being graded after {self.timeout_s:g} s: {shown}")
        return ids, min(timeout_s, left)

    def finished(self, items: Iterable[SubmissionOut]) -> list[SubmissionOut]:
        """The newly finished of `items`, no longer pending."""
        waiting = set(self.ids)
        fresh = [item for item in items if item.id in waiting]
        done = {item.id for item in fresh}
        self.ids = [i for i in self.ids if i not in done]
        return fresh
