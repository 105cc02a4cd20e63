"""Submissions and the evaluation (job) created with each one."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from sqlalchemy import Row, ScalarSelect, Select, func, select
from sqlalchemy.orm import Session, aliased

from kernelgrade.storage.clock import utcnow
from kernelgrade.storage.models import EvaluationRow, ProblemRow, SubmissionRow
from kernelgrade.storage.records import (
    UNFINISHED,
    EnvironmentFields,
    EvaluationRecord,
    JobStatus,
    NewSubmission,
    ProgressUpdate,
    SubmissionFilter,
    SubmissionPage,
    SubmissionRecord,
    SubmissionView,
)

_Row = Row[SubmissionRow, str, str, EvaluationRow]
# The newest evaluation of each listed submission.
_Latest = aliased(EvaluationRow, name="latest_evaluation")


def create_submission(session: Session, new: NewSubmission, now: datetime | None = None) -> SubmissionView:
    """Store the submission and queue its evaluation, in the caller's transaction."""
    now = now or utcnow()
    submission = SubmissionRow(problem_id=new.problem_id, submitter=new.submitter, model=new.model,
                               source=new.source, source_hash=new.source_hash, public=new.public,
                               api_key_id=new.api_key_id, created_at=now)
    session.add(submission)
    session.flush()
    evaluation = EvaluationRow(submission_id=submission.id, problem_id=new.problem_id,
                               requested_device=new.requested_device, status=JobStatus.QUEUED.value, attempts=0,
                               created_at=now)
    session.add(evaluation)
    session.flush()
    view = get_submission(session, submission.id)
    assert view is not None
    return view


def find_duplicate(session: Session, problem_id: int, source_hash: str, submitter: str,
                   model: str) -> SubmissionView | None:
    """The newest earlier submission of the same source by the same submitter and model to this version."""
    query = _views_query().where(SubmissionRow.problem_id == problem_id, SubmissionRow.source_hash == source_hash,
                                 SubmissionRow.submitter == submitter, SubmissionRow.model == model)
    row = session.execute(query.order_by(SubmissionRow.id.desc()).limit(1)).first()
    return _view(row) if row is not None else None


def get_submission(session: Session, submission_id: int) -> SubmissionView | None:
    row = session.execute(_views_query().where(SubmissionRow.id == submission_id)).first()
    if row is None:
        return None
    view = _view(row)
    if view.evaluation is None or view.evaluation.status is not JobStatus.QUEUED:
        return view
    return SubmissionView(view.submission, view.evaluation, _queue_position(session, view.evaluation))


def get_submissions(session: Session, ids: Sequence[int]) -> list[SubmissionView]:
    """The submissions of `ids` that exist, in the order of `ids`, queued ones with their queue positions."""
    rows = session.execute(_views_query().where(SubmissionRow.id.in_(ids))).all()
    found = {view.submission.id: view for view in map(_view, rows)}
    queued = [v.evaluation.id for v in found.values() if v.evaluation and v.evaluation.status is JobStatus.QUEUED]
    positions = _queue_positions(session, queued)
    return [_with_position(found[i], positions) for i in dict.fromkeys(ids) if i in found]


def submission_states(session: Session, ids: Sequence[int]) -> dict[int, JobStatus | None]:
    """The status of each existing submission's newest evaluation (None: it has none), in one query: what a
    wait for results reads on every round."""
    query = (select(SubmissionRow.id, _Latest.status).outerjoin(_Latest, _Latest.id == _newest_evaluation())
             .where(SubmissionRow.id.in_(ids)))
    return {sid: JobStatus(status) if status is not None else None for sid, status in session.execute(query)}


def list_submissions(session: Session, where: SubmissionFilter, cursor: int | None, limit: int) -> SubmissionPage:
    """Newest first; `cursor` is the id to continue below (from the previous page's next_cursor)."""
    query = _views_query()
    if where.problem is not None:
        query = query.where(ProblemRow.name == where.problem)
    if where.submitter is not None:
        query = query.where(SubmissionRow.submitter == where.submitter)
    if where.verdict is not None:
        query = query.where(_Latest.verdict == where.verdict)
    if cursor is not None:
        query = query.where(SubmissionRow.id < cursor)
    rows = session.execute(query.order_by(SubmissionRow.id.desc()).limit(limit + 1)).all()
    views = tuple(_view(r) for r in rows[:limit])
    next_cursor = views[-1].submission.id if len(rows) > limit and views else None
    return SubmissionPage(views, next_cursor)


def submissions_since(session: Session, api_key_id: int, since: datetime) -> tuple[int, datetime | None]:
    """How many submissions a key made since `since`, and when the oldest of them was made."""
    query = select(func.count(SubmissionRow.id), func.min(SubmissionRow.created_at)).where(
        SubmissionRow.api_key_id == api_key_id, SubmissionRow.created_at >= since)
    count, oldest = session.execute(query).one()
    if oldest is not None and oldest.tzinfo is None:  # aggregates bypass the column type on SQLite
        oldest = datetime.fromisoformat(str(oldest)).replace(tzinfo=since.tzinfo)
    return int(count), oldest


def _views_query() -> Select[SubmissionRow, str, str, EvaluationRow]:
    return (select(SubmissionRow, ProblemRow.name, ProblemRow.content_hash, _Latest)
            .join(ProblemRow, ProblemRow.id == SubmissionRow.problem_id)
            .outerjoin(_Latest, _Latest.id == _newest_evaluation()))


def _newest_evaluation() -> ScalarSelect[int]:
    return (select(func.max(EvaluationRow.id)).where(EvaluationRow.submission_id == SubmissionRow.id)
            .correlate(SubmissionRow).scalar_subquery())


def _queue_position(session: Session, evaluation: EvaluationRecord) -> int:
    ahead = select(func.count(EvaluationRow.id)).where(
        EvaluationRow.status.in_(UNFINISHED), EvaluationRow.requested_device == evaluation.requested_device,
        EvaluationRow.id < evaluation.id)
    return int(session.execute(ahead).scalar_one())


def _queue_positions(session: Session, evaluation_ids: Sequence[int]) -> dict[int, int]:
    """_queue_position of several queued evaluations, in one query."""
    if not evaluation_ids:
        return {}
    ahead = aliased(EvaluationRow, name="ahead")
    count = (select(func.count(ahead.id)).where(ahead.status.in_(UNFINISHED),
                                                ahead.requested_device == EvaluationRow.requested_device,
                                                ahead.id < EvaluationRow.id)
             .correlate(EvaluationRow).scalar_subquery())
    rows = session.execute(select(EvaluationRow.id, count).where(EvaluationRow.id.in_(evaluation_ids)))
    return {evaluation_id: int(position) for evaluation_id, position in rows}


def _with_position(view: SubmissionView, positions: dict[int, int]) -> SubmissionView:
    if view.evaluation is None or view.evaluation.id not in positions:
        return view
    return SubmissionView(view.submission, view.evaluation, positions[view.evaluation.id])


def _view(row: _Row) -> SubmissionView:
    submission, problem_name, problem_hash, outer_joined = row
    evaluation: EvaluationRow | None = outer_joined
    record = SubmissionRecord(id=submission.id, problem_id=submission.problem_id, problem_name=problem_name,
                              problem_hash=problem_hash, submitter=submission.submitter, model=submission.model,
                              source=submission.source, source_hash=submission.source_hash, public=submission.public,
                              api_key_id=submission.api_key_id, created_at=submission.created_at)
    return SubmissionView(record, evaluation_record(evaluation) if evaluation is not None else None)


def evaluation_record(row: EvaluationRow) -> EvaluationRecord:
    return EvaluationRecord(
        id=row.id, submission_id=row.submission_id, requested_device=row.requested_device,
        device_class=row.device_class, status=JobStatus(row.status), verdict=row.verdict, attempts=row.attempts,
        speedup=row.speedup, reference_median_ms=row.reference_median_ms,
        candidate_median_ms=row.candidate_median_ms, error_code=row.error_code, error_summary=row.error_summary,
        last_error=row.last_error, environment=_environment(row), progress=_progress(row), result=row.result,
        created_at=row.created_at, started_at=row.started_at, finished_at=row.finished_at,
        speedup_vs_compiled=row.speedup_vs_compiled)


def _environment(row: EvaluationRow) -> EnvironmentFields | None:
    if row.torch_version is None and row.device_name is None:
        return None
    return EnvironmentFields(device_name=row.device_name, driver=row.driver_version, torch=row.torch_version,
                             cuda=row.cuda_version, sandbox=row.sandbox, host=row.host)


def _progress(row: EvaluationRow) -> ProgressUpdate | None:
    if row.progress_stage is None:
        return None
    return ProgressUpdate(row.progress_stage, row.progress_message or "", row.progress_done, row.progress_total)
