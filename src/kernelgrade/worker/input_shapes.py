"""A problem's input shapes and memory for GET /v1/problems/{name}, found cheaply: get_inputs() (and for the
memory, the reference) runs with torch's default device set to `meta`, so tensors have shapes and dtypes but
no memory and no compute."""

from __future__ import annotations

import logging
from typing import Any

from kernelgrade.storage.database import Database
from kernelgrade.storage.problems import problems_without_shapes, set_input_shapes
from kernelgrade.storage.records import ProblemMemoryNeed, ProblemRecord

log = logging.getLogger(__name__)


def describe_inputs(problem: ProblemRecord) -> tuple[str, ...]:
    import torch

    from kernelgrade.evaluator.source_module import load_problem_module

    module = load_problem_module(problem.source, problem.name)
    with torch.device("meta"):
        inputs = list(module.get_inputs())
    return tuple(_describe(value) for value in inputs)


def _describe(value: Any) -> str:
    import torch

    if isinstance(value, torch.Tensor):
        dtype = str(value.dtype).removeprefix("torch.")
        return f"{dtype}[{', '.join(str(d) for d in value.shape)}]"
    return f"{type(value).__name__} {value!r}"[:80]


def memory_need(problem: ProblemRecord) -> ProblemMemoryNeed:
    from kernelgrade.evaluator.problem_memory import estimate

    found = estimate(problem.source, problem.name)
    return ProblemMemoryNeed(inputs=found.inputs, weights=found.weights, outputs=found.outputs, oracle=found.oracle,
                             comparison=found.comparison, total=found.total, least=found.least, timing=found.timing)


def fill_missing_shapes(database: Database, limit: int = 100) -> int:
    """Describe problems that have no shapes or memory yet; a problem whose get_inputs fails on `meta` gets
    (), one whose reference fails there a note instead of its memory."""
    with database.session() as session:
        missing = problems_without_shapes(session, limit)
    for problem in missing:
        try:
            shapes = describe_inputs(problem)
        except Exception as exc:  # a problem's own code failing on meta tensors only loses the shapes
            log.info("no input shapes for %s: %s: %s", problem.name, type(exc).__name__, exc)
            shapes = ()
        memory, note = _memory(problem)
        with database.session() as session:
            set_input_shapes(session, problem.id, shapes, memory, note)
    return len(missing)


def _memory(problem: ProblemRecord) -> tuple[ProblemMemoryNeed | None, str]:
    try:
        return memory_need(problem), ""
    except Exception as exc:  # the reference's own code failing on meta tensors only loses the estimate
        log.info("no memory estimate for %s: %s: %s", problem.name, type(exc).__name__, exc)
        return None, f"not estimated: the reference does not run on torch's meta device ({type(exc).__name__})"
