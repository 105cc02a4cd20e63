"""What a problem needs on the judge's device, found before anyone submits: the reference is built and run
on torch's `meta` device, which gives every tensor's shape and dtype without memory or compute.

The figure counts what the judge holds for one trial: the inputs, the reference's weights (fp32 and the
float64 copy the oracle runs), the reference's and the candidate's outputs, the float64 oracle (its inputs
and outputs), and the comparison's temporaries; beside it, what the two run children hold while the candidate
is timed. A model's intermediate activations are not counted: they
come and go inside forward() and depend on its kernels, so the figure is a lower bound of the peak.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import torch

from kernelgrade.evaluator.compare import flatten_outputs
from kernelgrade.evaluator.compare_memory import FLOAT64, bytes_per_element
from kernelgrade.evaluator.source_module import load_problem_module
from kernelgrade.evaluator.timing_room import TimingFootprint


@dataclass(frozen=True)
class ProblemMemory:
    inputs: int
    weights: int
    outputs: int  # the reference's and the candidate's
    oracle: int  # float64 inputs and outputs of the oracle
    comparison: int  # the comparison's temporaries when it runs unchunked
    expected: int = 0  # what the judge expects of one trial: the reference's outputs and their float64 oracle
    # What the candidate's and the reference's run children hold together while timing, on one input set
    # (timing_room.py): the judge then keeps little, but both children must fit beside it.
    timing: int = 0

    @property
    def total(self) -> int:
        return self.inputs + self.weights + self.outputs + self.oracle + self.comparison

    @property
    def least(self) -> int:
        """What must fit at once: the comparison's temporaries shrink with its chunks (compare_memory.py)."""
        return self.total - self.comparison


def estimate(source: str, name: str) -> ProblemMemory:
    """The problem's memory from its reference run on `meta`; raises whatever the problem's code raises
    there (an operation with no meta implementation, a `.item()` on a meta tensor)."""
    module = load_problem_module(source, name)
    with torch.device("meta"):
        model = module.Model(*module.get_init_inputs())
        inputs = list(module.get_inputs())
        with torch.no_grad():
            outputs = [o for o in flatten_outputs(model(*inputs)) if isinstance(o, torch.Tensor)]
    weights = [*model.parameters(), *model.buffers()]
    return ProblemMemory(inputs=_bytes(_tensors(inputs)), weights=_bytes(weights) + float64_bytes(weights),
                         outputs=2 * _bytes(outputs), oracle=float64_bytes(_tensors(inputs)) + float64_bytes(outputs),
                         comparison=sum(o.numel() * _comparison_per_element(o) for o in outputs),
                         expected=_bytes(outputs) + float64_bytes(outputs),
                         timing=TimingFootprint(_bytes(_tensors(inputs)), _bytes(outputs)).both(1))


def _tensors(values: Iterable[Any]) -> list[torch.Tensor]:
    return [v for v in values if isinstance(v, torch.Tensor)]


def _bytes(tensors: Iterable[torch.Tensor]) -> int:
    return sum(t.numel() * t.element_size() for t in tensors)


def float64_bytes(tensors: Iterable[torch.Tensor]) -> int:
    """The oracle's float64 copies: of floating-point tensors only, the others are used as they are."""
    return sum(t.numel() * FLOAT64 for t in tensors if t.is_floating_point())


def _comparison_per_element(output: torch.Tensor) -> int:
    exact = not (output.is_floating_point() or output.is_complex())
    return bytes_per_element(exact=exact, has_oracle=output.dtype == torch.float32)
