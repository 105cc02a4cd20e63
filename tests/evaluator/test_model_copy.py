"""The reference's copy for the oracle and the emulations: constructed as a shell on the meta device where that
stands for a fresh construction, else constructed seeded on the host; either way wholly its own and holding the
reference's values."""

from __future__ import annotations

import random
from collections.abc import Callable

import torch

from kernelgrade.evaluator.host.model_copy import copy_model

CPU = torch.device("cpu")


class Layers(torch.nn.Module):
    def __init__(self, size: int) -> None:
        super().__init__()
        self.linear = torch.nn.Linear(size, size)
        self.register_buffer("offset", torch.randn(size))
        self.scale = torch.rand(size)
        self.size = size
        # A function over its own submodule, as minGPT's block holds one: a copy must call its own.
        linear = self.linear
        self.project = lambda x: linear(x)  # noqa: PLW0108 - the closure is what is tested

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.project(x) * self.scale + self.offset


class ReadsValues(Layers):
    def __init__(self, size: int) -> None:
        super().__init__(size)
        self.threshold = float(self.offset.abs().max())  # a value read at construction


class ListedTensor(Layers):
    def __init__(self, size: int) -> None:
        super().__init__(size)
        self.extra = [torch.ones(size)]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return super().forward(x) + self.extra[0]


class DrawsASetting(Layers):
    def __init__(self, size: int) -> None:
        super().__init__(size)
        self.rate = random.random()


def copied(cls: Callable[[int], Layers]) -> tuple[Layers, torch.nn.Module, list[int]]:
    """The reference (seeded), its copy, and how many seeded constructions the copy took."""
    def seeded() -> Layers:
        torch.manual_seed(7)
        random.seed(7)
        return cls(8)

    reference, built = seeded(), []

    def counted() -> Layers:
        built.append(1)
        return seeded()

    with torch.no_grad():  # the reference's state moved on since construction: the copy takes the current one
        reference.linear.weight.add_(1.0)
    return reference, copy_model(reference, lambda: cls(8), counted, CPU), built


def assert_wholly_its_own(reference: Layers, copy: torch.nn.Module) -> None:
    x = torch.randn(3, 8)
    assert torch.equal(copy(x), reference(x))
    with torch.no_grad():
        copy.linear.weight.zero_()
        copy.scale.zero_()
    assert not torch.equal(copy(x), reference(x))
    assert reference.linear.weight.abs().sum() > 0 and reference.scale.abs().sum() > 0


def test_a_shell_takes_the_references_values_without_a_seeded_construction() -> None:
    reference, copy, built = copied(Layers)
    assert built == []
    assert_wholly_its_own(reference, copy)


def test_a_constructor_that_reads_values_is_constructed_seeded() -> None:
    reference, copy, built = copied(ReadsValues)
    assert built == [1]
    assert copy.threshold == reference.threshold
    assert_wholly_its_own(reference, copy)


def test_a_tensor_the_shell_holds_where_the_reference_gives_none_is_constructed_seeded() -> None:
    reference, copy, built = copied(ListedTensor)
    assert built == [1]
    assert_wholly_its_own(reference, copy)


def test_a_setting_drawn_at_construction_is_the_references() -> None:
    reference, copy, built = copied(DrawsASetting)
    assert built == [1]
    assert copy.rate == reference.rate
