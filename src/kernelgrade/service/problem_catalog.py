"""Problems into the database: the built-in suite at startup, POST /v1/problems, and folder imports.

The problems loader imports the evaluator's request types (and with them torch), so it is imported inside
these functions, never when the API module loads.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from kernelgrade.service.errors import invalid
from kernelgrade.storage.database import Database
from kernelgrade.storage.problems import upsert_problem
from kernelgrade.storage.records import NewProblem, ProblemMeta, UpsertOutcome

if TYPE_CHECKING:
    from kernelgrade.problems import Problem


@dataclass(frozen=True)
class ImportReport:
    added: tuple[str, ...]
    new_versions: tuple[str, ...]
    unchanged: tuple[str, ...]
    errors: tuple[str, ...]


def new_problem(problem: Problem) -> NewProblem:
    meta = ProblemMeta(precision=problem.precision.kind.value, precision_description=problem.precision.describe(),
                       atol=problem.precision.atol, rtol=problem.precision.rtol, flops=problem.flops,
                       bytes_moved=problem.bytes_moved, tags=tuple(problem.tags), description=problem.description)
    return NewProblem(name=problem.name, suite=problem.suite, level=problem.level, device_kind=problem.device.value,
                      source=problem.source, content_hash=problem.content_hash, meta=meta)


def parse_problem(name: str, source: str, suite: str, level: int | None) -> NewProblem:
    """A problem from an API request; a file that is not a problem is a 422 naming what is missing."""
    from kernelgrade.problems import ProblemFormatError, load_problem_source

    try:
        return new_problem(load_problem_source(source, name, suite, level))
    except (ProblemFormatError, ValueError) as exc:
        raise invalid("invalid_problem", f"{exc}. A problem file defines Model, get_inputs and get_init_inputs"
                      " (KernelBench format), optionally with a KERNELGRADE metadata dict.") from exc


def add_problem(database: Database, problem: NewProblem) -> UpsertOutcome:
    with database.session() as session:
        return upsert_problem(session, problem)


def upsert_builtins(database: Database) -> list[UpsertOutcome]:
    from kernelgrade.problems import builtin_problems

    with database.session() as session:
        return [upsert_problem(session, new_problem(p)) for p in builtin_problems()]


def import_folder(database: Database, folder: Path, suite: str | None = None) -> ImportReport:
    """Every problem file under `folder`; idempotent: an unchanged file changes nothing."""
    from kernelgrade.problems import scan_folder

    scanned = scan_folder(folder, suite)
    outcomes = []
    with database.session() as session:
        for problem in scanned.problems:
            outcomes.append(upsert_problem(session, new_problem(problem)))
    return ImportReport(
        added=tuple(o.problem.name for o in outcomes if o.created and o.previous_latest_hash is None),
        new_versions=tuple(o.problem.name for o in outcomes if o.previous_latest_hash is not None),
        unchanged=tuple(o.problem.name for o in outcomes if not o.created and o.previous_latest_hash is None),
        errors=tuple(f"{e.path}: {e.message}" for e in scanned.errors))
