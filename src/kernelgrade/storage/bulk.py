"""Inserting many finished results at once: for importing results graded elsewhere and for benchmarks.
Each result becomes a submission and a done evaluation, as if it had been graded here."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import insert
from sqlalchemy.orm import Session

from kernelgrade.storage.board_tables import rebuild
from kernelgrade.storage.models import EvaluationRow, SubmissionRow
from kernelgrade.storage.records import JobStatus


@dataclass(frozen=True)
class GradedResult:
    problem_id: int
    submitter: str
    model: str
    source: str
    source_hash: str
    verdict: str
    speedup: float | None
    reference_median_ms: float | None
    candidate_median_ms: float | None
    device_class: str
    finished_at: datetime


def insert_results(session: Session, results: Sequence[GradedResult], *, rebuild_boards: bool = True) -> list[int]:
    """Insert the results in two multi-row statements; returns the new submission ids in order. Loading in
    batches, pass rebuild_boards=False and call board_tables.rebuild once at the end."""
    returning = insert(SubmissionRow).returning(SubmissionRow.id, sort_by_parameter_order=True)
    submission_ids = list(session.scalars(returning, [_submission(r) for r in results]))
    session.execute(insert(EvaluationRow), [_evaluation(r, i) for r, i in zip(results, submission_ids, strict=True)])
    if rebuild_boards:
        rebuild(session, sorted({r.problem_id for r in results}))
    return submission_ids


def _submission(result: GradedResult) -> dict[str, object]:
    return {"problem_id": result.problem_id, "submitter": result.submitter, "model": result.model,
            "source": result.source, "source_hash": result.source_hash, "public": False, "api_key_id": None,
            "created_at": result.finished_at}


def _evaluation(result: GradedResult, submission_id: int) -> dict[str, object]:
    kind = "cpu" if result.device_class.startswith("cpu") else "cuda"
    return {"submission_id": submission_id, "problem_id": result.problem_id, "requested_device": kind,
            "device_class": result.device_class, "status": JobStatus.DONE.value, "verdict": result.verdict,
            "attempts": 1, "result": {"verdict": result.verdict, "speedup": result.speedup},
            "speedup": result.speedup, "reference_median_ms": result.reference_median_ms,
            "candidate_median_ms": result.candidate_median_ms, "progress_done": 0, "progress_total": 0,
            "created_at": result.finished_at, "started_at": result.finished_at, "finished_at": result.finished_at}
