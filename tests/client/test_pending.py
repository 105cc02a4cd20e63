"""What as_completed waits for next, and for how long."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from kernelgrade.client import SubmissionLimitsOut, SubmissionOut
from kernelgrade.client.calls import WAIT_S
from kernelgrade.client.pending import TURN_WAIT_S, Pending


def _done(submission_id: int) -> SubmissionOut:
    return SubmissionOut(id=submission_id, problem="p", problem_version="h", submitter="s", model="", public=False,
                         source_hash="x", created_at=datetime(2026, 1, 1, tzinfo=UTC), evaluation=None)


def test_ids_that_fit_one_request_get_one_long_wait_until_all_are_done() -> None:
    pending = Pending([3, 1, 3, 2], SubmissionLimitsOut(max_batch=32, max_ids=200, max_wait_s=60.0), None)
    assert pending.next_wait() == ([3, 1, 2], WAIT_S)
    assert [s.id for s in pending.finished([_done(1), _done(7)])] == [1]  # 7 was never asked for
    assert pending.next_wait() == ([3, 2], WAIT_S) and pending.finished([_done(1)]) == []
    pending.finished([_done(3), _done(2)])
    assert not pending


def test_more_ids_than_a_request_carries_are_waited_for_in_turn() -> None:
    pending = Pending(range(1, 6), SubmissionLimitsOut(max_batch=32, max_ids=2, max_wait_s=60.0), None)
    turns = [pending.next_wait() for _ in range(4)]
    assert turns == [([1, 2], TURN_WAIT_S), ([3, 4], TURN_WAIT_S), ([5], TURN_WAIT_S), ([1, 2], TURN_WAIT_S)]


def test_the_callers_timeout_shortens_the_last_wait_then_ends_it() -> None:
    now = [100.0]
    limits = SubmissionLimitsOut(max_batch=32, max_ids=200, max_wait_s=10.0)
    pending = Pending([4, 5], limits, 12.0, clock=lambda: now[0])
    assert pending.next_wait() == ([4, 5], 10.0)  # the server's longest wait
    now[0] += 10.0
    assert pending.next_wait() == ([4, 5], pytest.approx(2.0))
    now[0] += 2.0
    with pytest.raises(TimeoutError, match=r"2 submission\(s\) still being graded after 12 s: 4, 5"):
        pending.next_wait()
