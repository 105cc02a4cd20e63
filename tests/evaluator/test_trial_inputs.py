"""Correctness trials are made one ahead of the child, unless a trial's expected outputs are too large to hold
two of them beside the child's own."""

from __future__ import annotations

import threading
import time

import torch

from kernelgrade.evaluator.compare import Expected
from kernelgrade.evaluator.host.reference import TrialData
from kernelgrade.evaluator.judge.correctness import Trial, TrialInputs

WAIT_S = 10.0  # far past one tiny trial; only a trial never made reaches it


class CountingReference:
    """A reference whose trials are 4 KiB of expected outputs, counting the trials asked of it."""

    device = torch.device("cpu")

    def __init__(self) -> None:
        self.made: list[int] = []
        self.second = threading.Event()

    def trial(self, seed: int) -> TrialData:
        self.made.append(seed)
        if len(self.made) == 2:
            self.second.set()
        return TrialData([torch.full((4,), float(seed))], Expected([torch.zeros(1024)]), (seed,))


def trials(count: int) -> list[Trial]:
    return [Trial(i, False, 100 + i) for i in range(count)]


def make(room: int) -> tuple[CountingReference, TrialInputs]:
    reference = CountingReference()
    return reference, TrialInputs(reference, trials(3), ahead_room=room)  # type: ignore[arg-type]


def test_a_small_trial_has_the_next_one_made_while_the_child_runs() -> None:
    reference, inputs = make(room=1 << 20)
    with inputs:
        data = inputs.take(0)
        assert reference.second.wait(WAIT_S), "the next trial was not made ahead"
        assert data.fingerprints == (100,)
        assert [inputs.take(i).fingerprints for i in (1, 2)] == [(101,), (102,)]
    assert reference.made == [100, 101, 102]


def test_a_trial_too_large_to_hold_twice_is_made_only_when_taken() -> None:
    reference, inputs = make(room=1024)  # less than a trial's 4 KiB of expected outputs
    with inputs:
        inputs.take(0)
        assert not reference.second.wait(0.3), "a trial was made ahead past the room"
        assert reference.made == [100]
        assert [inputs.take(i).fingerprints for i in (1, 2)] == [(101,), (102,)]
    assert reference.made == [100, 101, 102]


def test_the_default_room_on_the_cpu_always_makes_trials_ahead() -> None:
    with TrialInputs(CountingReference(), []) as inputs:  # type: ignore[arg-type]
        assert inputs.ahead_room >= 1 << 40


def test_a_trial_whose_making_peaked_past_the_room_is_made_only_when_taken() -> None:
    # Its 4 KiB of expected outputs fit the room, but making it took 64 KiB at its height (a float64 reference
    # run's intermediate tensors): the child's call would run beside that.
    reference = CountingReference()
    inputs = TrialInputs(reference, trials(3), ahead_room=16 << 10,  # type: ignore[arg-type]
                         peak=lambda _device, _base: 64 << 10)
    with inputs:
        inputs.take(0)
        assert not reference.second.wait(0.3), "a trial was made ahead past the room"
        assert [inputs.take(i).fingerprints for i in (1, 2)] == [(101,), (102,)]
    assert reference.made == [100, 101, 102]


def test_the_first_trial_is_made_as_soon_as_the_trials_are_opened() -> None:
    """The pipeline opens them before the candidate loads (correctness.trial_inputs): the first trial is made
    while the child builds ModelNew, not once the first call waits for it."""
    reference = CountingReference()
    with TrialInputs(reference, trials(2)) as inputs:  # type: ignore[arg-type]
        deadline = time.monotonic() + WAIT_S
        while not reference.made and time.monotonic() < deadline:
            time.sleep(0.01)
        assert reference.made == [100], "nothing was made before the first trial was taken"
        assert inputs.take(0).fingerprints == (100,)


def test_the_first_trial_is_handed_on_in_the_thread_that_made_it_before_it_can_be_taken() -> None:
    """The pipeline grows the child's region for it there, while the child still loads ModelNew."""
    handed: list[tuple[tuple[int, ...], str]] = []
    reference = CountingReference()
    first_made = lambda data: handed.append((data.fingerprints, threading.current_thread().name))  # noqa: E731
    with TrialInputs(reference, trials(2), first_made=first_made) as inputs:  # type: ignore[arg-type]
        assert inputs.take(0).fingerprints == (100,)
        assert len(handed) == 1, "the first trial could be taken before it was handed on"
        inputs.take(1)
    assert handed[0][0] == (100,) and handed[0][1].startswith("trial-inputs")
    assert len(handed) == 1, "a later trial was handed on too"


def test_a_first_trial_made_after_the_trials_closed_is_not_handed_on() -> None:
    """An evaluation that ended at load closes its trials: the region is not grown for a call that never comes."""
    release = threading.Event()
    handed: list[TrialData] = []

    class SlowReference(CountingReference):
        def trial(self, seed: int) -> TrialData:
            assert release.wait(WAIT_S)
            return super().trial(seed)

    inputs = TrialInputs(SlowReference(), trials(2), first_made=handed.append)  # type: ignore[arg-type]
    with inputs:
        threading.Timer(0.2, release.set).start()  # the making finishes while __exit__ waits for it
    assert release.is_set() and handed == []
