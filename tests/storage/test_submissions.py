"""Submissions, their queued evaluation, de-duplication lookups and cursor pagination."""

from __future__ import annotations

from datetime import timedelta

from kernelgrade.storage.clock import utcnow
from kernelgrade.storage.database import Database
from kernelgrade.storage.records import JobStatus, SubmissionFilter
from kernelgrade.storage.submissions import (
    find_duplicate,
    get_submission,
    get_submissions,
    list_submissions,
    submission_states,
    submissions_since,
)
from tests.storage.builders import add_problem, add_submission, grade


def test_a_submission_is_queued_with_its_position(database: Database) -> None:
    problem = add_problem(database)
    first = add_submission(database, problem, "a = 1\n")
    second = add_submission(database, problem, "a = 2\n")
    assert first.evaluation is not None and first.evaluation.status is JobStatus.QUEUED
    with database.session() as session:
        view = get_submission(session, second.submission.id)
        assert view is not None and view.queue_position == 1
        assert get_submission(session, 999_999) is None


def test_many_are_read_in_the_order_asked_with_their_queue_positions(database: Database) -> None:
    problem = add_problem(database)
    views = [add_submission(database, problem, f"m{i}\n", device="cuda" if i == 1 else "cpu") for i in range(4)]
    ids = [v.submission.id for v in views]
    grade(database, views[0], "correct", 1.5)
    with database.session() as session:
        many = get_submissions(session, [ids[3], 999_999, ids[1], ids[0], ids[3], ids[2]])
        one_by_one = [get_submission(session, i) for i in (ids[3], ids[1], ids[0], ids[2])]
        states = submission_states(session, [*ids, 999_999])
    assert [v.submission.id for v in many] == [ids[3], ids[1], ids[0], ids[2]]
    assert many == one_by_one  # the queue positions too: per device, only the jobs ahead still unfinished
    assert [v.queue_position for v in many] == [1, 0, None, 0]
    assert states == {ids[0]: JobStatus.DONE, ids[1]: JobStatus.QUEUED, ids[2]: JobStatus.QUEUED,
                      ids[3]: JobStatus.QUEUED}


def test_duplicates_are_found_per_submitter_and_model(database: Database) -> None:
    problem = add_problem(database)
    view = add_submission(database, problem, "same\n", submitter="alice", model="m1")
    source_hash = view.submission.source_hash
    with database.session() as session:
        found = find_duplicate(session, problem.id, source_hash, "alice", "m1")
        assert found is not None and found.submission.id == view.submission.id
        assert find_duplicate(session, problem.id, source_hash, "bob", "m1") is None
        assert find_duplicate(session, problem.id, source_hash, "alice", "m2") is None


def test_listing_pages_newest_first_and_filters(database: Database) -> None:
    problem = add_problem(database)
    other = add_problem(database, "other")
    ids = [add_submission(database, problem, f"s{i}\n", submitter="alice" if i % 2 else "bob").submission.id
           for i in range(5)]
    add_submission(database, other, "x\n")
    grade(database, get_view(database, ids[0]), "incorrect", None)
    with database.session() as session:
        first = list_submissions(session, SubmissionFilter(problem="add_relu"), None, 2)
        second = list_submissions(session, SubmissionFilter(problem="add_relu"), first.next_cursor, 2)
        third = list_submissions(session, SubmissionFilter(problem="add_relu"), second.next_cursor, 2)
        alice = list_submissions(session, SubmissionFilter(submitter="alice"), None, 50)
        incorrect = list_submissions(session, SubmissionFilter(verdict="incorrect"), None, 50)
    pages = [v.submission.id for page in (first, second, third) for v in page.items]
    assert pages == sorted(ids, reverse=True)
    assert third.next_cursor is None
    assert {v.submission.submitter for v in alice.items} == {"alice"} and len(alice.items) == 3
    assert [v.submission.id for v in incorrect.items] == [ids[0]]


def test_submissions_since_counts_a_keys_recent_submissions(database: Database) -> None:
    problem = add_problem(database)
    from kernelgrade.storage.api_keys import NewApiKey, add_key
    from kernelgrade.storage.records import Role

    with database.session() as session:
        key = add_key(session, NewApiKey("k", Role.SUBMITTER, "kg_abcdefghi", "0" * 64))
    for i in range(3):
        add_submission(database, problem, f"q{i}\n", api_key_id=key.id)
    with database.session() as session:
        count, oldest = submissions_since(session, key.id, utcnow() - timedelta(hours=1))
        none, _ = submissions_since(session, key.id, utcnow() + timedelta(seconds=5))
    assert count == 3 and none == 0
    assert oldest is not None and utcnow() - oldest < timedelta(minutes=1)


def get_view(database: Database, submission_id: int):  # type: ignore[no-untyped-def]
    with database.session() as session:
        return get_submission(session, submission_id)
