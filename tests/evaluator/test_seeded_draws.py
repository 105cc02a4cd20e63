"""Seeded draws of problem code: the values torch.manual_seed would give, with no lock between judges' threads
unless the problem's code reaches torch's global generator."""

from __future__ import annotations

import threading

import torch

from kernelgrade.evaluator.host.seeded_draws import SeededDraws

WAIT_S = 10.0  # far past any draw here; only a deadlock reaches it


def inputs() -> list[torch.Tensor]:
    return [torch.rand(4, 8), torch.randn(3), torch.randint(0, 9, (5,)), torch.nn.Linear(4, 2).weight.detach()]


def the_old_way(seed: int, draw=inputs) -> list[torch.Tensor]:  # type: ignore[no-untyped-def]
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return list(draw())


def test_private_draws_give_what_the_seeded_global_generator_gives_and_leave_it_alone() -> None:
    before = torch.get_rng_state()
    draws = SeededDraws("p")
    drawn = draws.run(7, inputs)
    assert all(torch.equal(a, b) for a, b in zip(drawn, the_old_way(7), strict=True))
    assert torch.equal(before, torch.get_rng_state())
    assert not draws.global_only


def test_one_judge_draws_while_another_is_in_the_middle_of_a_draw() -> None:
    started, release, other_done = threading.Event(), threading.Event(), threading.Event()

    def slow() -> torch.Tensor:
        first = torch.rand(4)
        started.set()
        assert release.wait(WAIT_S)
        return torch.cat([first, torch.rand(4)])

    result: list[torch.Tensor] = []
    slow_thread = threading.Thread(target=lambda: result.append(SeededDraws("slow").run(3, slow)))
    slow_thread.start()
    assert started.wait(WAIT_S)
    fast = threading.Thread(target=lambda: (SeededDraws("fast").run(4, inputs), other_done.set()))
    fast.start()
    assert other_done.wait(WAIT_S), "the second draw waited for the first"
    release.set()
    slow_thread.join(WAIT_S)
    fast.join(WAIT_S)
    # The other thread's draws between the slow one's two halves did not move its sequence.
    assert torch.equal(result[0], the_old_way(3, lambda: [torch.rand(8)])[0])


def test_a_problem_that_seeds_the_global_generator_itself_goes_the_old_way() -> None:
    def seeds_itself() -> list[torch.Tensor]:
        torch.manual_seed(11)
        return [torch.rand(3), torch.rand(2)]

    draws = SeededDraws("seeds-itself")
    before = torch.get_rng_state()
    assert all(torch.equal(a, b) for a, b in zip(draws.run(5, seeds_itself), the_old_way(5, seeds_itself),
                                                 strict=True))
    assert draws.global_only
    assert torch.equal(before, torch.get_rng_state())


def test_a_draw_the_mode_cannot_redirect_goes_the_old_way_and_stays_seeded() -> None:
    def like() -> list[torch.Tensor]:
        return [torch.rand_like(torch.empty(6))]

    draws = SeededDraws("like")
    first = draws.run(9, like)
    assert draws.global_only
    assert torch.equal(first[0], draws.run(9, like)[0])
    assert torch.equal(first[0], the_old_way(9, like)[0])


def test_an_old_way_draw_keeps_private_ones_out_until_it_ends() -> None:
    inside, release, other_done = threading.Event(), threading.Event(), threading.Event()

    def global_draw() -> torch.Tensor:
        torch.manual_seed(1)
        inside.set()
        assert release.wait(WAIT_S)
        return torch.rand(2)

    old_way = SeededDraws("old")
    old_way.global_only = True
    holder = threading.Thread(target=lambda: old_way.run(2, global_draw))
    holder.start()
    assert inside.wait(WAIT_S)
    waiter = threading.Thread(target=lambda: (SeededDraws("new").run(2, inputs), other_done.set()))
    waiter.start()
    assert not other_done.wait(0.3), "a private draw ran during an old-way one"
    release.set()
    assert other_done.wait(WAIT_S)
    holder.join(WAIT_S)
    waiter.join(WAIT_S)
