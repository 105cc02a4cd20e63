"""Rows for storage tests, made through the storage functions themselves."""

from __future__ import annotations

import hashlib

from kernelgrade.storage.database import Database
from kernelgrade.storage.jobs import Lease, claim_next, finish_job
from kernelgrade.storage.problems import upsert_problem
from kernelgrade.storage.records import (
    EnvironmentFields,
    EvaluationRecord,
    JobOutcome,
    NewProblem,
    NewSubmission,
    ProblemMeta,
    ProblemRecord,
    SubmissionView,
)
from kernelgrade.storage.submissions import create_submission, get_submission

PROBLEM_SOURCE = "import torch\nclass Model: pass\ndef get_inputs(): return []\ndef get_init_inputs(): return []\n"
CPU_ROUTES = {"cpu": "cpu-x86_64"}


def new_problem(name: str = "add_relu", source: str = PROBLEM_SOURCE, suite: str = "cpu",
                device: str = "cpu") -> NewProblem:
    meta = ProblemMeta(precision="fp32", precision_description="fp32", atol=1e-4, rtol=1e-4, flops=2e6, tags=("x",))
    return NewProblem(name=name, suite=suite, level=1, device_kind=device, source=source,
                      content_hash=hashlib.sha256(source.encode()).hexdigest(), meta=meta)


def add_problem(database: Database, name: str = "add_relu", source: str = PROBLEM_SOURCE,
                suite: str = "cpu") -> ProblemRecord:
    with database.session() as session:
        return upsert_problem(session, new_problem(name, source, suite)).problem


def add_submission(database: Database, problem: ProblemRecord, source: str = "class ModelNew: pass\n",
                   submitter: str = "alice", model: str = "m1", device: str = "cpu",
                   api_key_id: int | None = None) -> SubmissionView:
    new = NewSubmission(problem_id=problem.id, submitter=submitter, model=model, source=source,
                        source_hash=hashlib.sha256(source.encode()).hexdigest(), public=False, api_key_id=api_key_id,
                        requested_device=device)
    with database.session() as session:
        return create_submission(session, new)


def outcome(verdict: str = "correct", speedup: float | None = 1.5,
            speedup_vs_compiled: float | None = None) -> JobOutcome:
    env = EnvironmentFields(device_name="cpu", driver=None, torch="2.x", cuda=None, sandbox="none", host="test")
    return JobOutcome(verdict=verdict, result={"verdict": verdict, "speedup": speedup}, speedup=speedup,
                      reference_median_ms=3.0 if speedup else None,
                      candidate_median_ms=3.0 / speedup if speedup else None,
                      error_code=None if verdict == "correct" else "wrong_values",
                      error_summary=None if verdict == "correct" else "values differ", environment=env,
                      speedup_vs_compiled=speedup_vs_compiled)


def grade(database: Database, view: SubmissionView, verdict: str = "correct", speedup: float | None = 1.5,
          device_class: str = "cpu-x86_64", speedup_vs_compiled: float | None = None) -> None:
    """Claim the submission's job (it must be the oldest queued) and record a result for it."""
    with database.session() as session:
        job = claim_next(session, Lease("grader", 60), {"cpu": device_class}, 3)
        assert job is not None and job.submission_id == view.submission.id
        assert finish_job(session, job.evaluation_id, "grader", outcome(verdict, speedup, speedup_vs_compiled))


def evaluation_of(database: Database, submission_id: int) -> EvaluationRecord:
    """The submission's evaluation as stored now."""
    with database.session() as session:
        view = get_submission(session, submission_id)
    assert view is not None and view.evaluation is not None
    return view.evaluation
