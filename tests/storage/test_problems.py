"""Problem versions: the same content is one row; changed content is a new version and becomes latest."""

from __future__ import annotations

from kernelgrade.storage.database import Database
from kernelgrade.storage.problems import (
    latest_problem,
    list_latest_problems,
    problem_version,
    problems_without_shapes,
    set_input_shapes,
    upsert_problem,
)
from kernelgrade.storage.records import ProblemMemoryNeed
from tests.storage.builders import PROBLEM_SOURCE, new_problem


def test_upsert_is_idempotent_on_content(database: Database) -> None:
    with database.session() as session:
        first = upsert_problem(session, new_problem())
        again = upsert_problem(session, new_problem())
    assert first.created and not again.created
    assert again.problem.id == first.problem.id and again.previous_latest_hash is None


def test_changed_source_is_a_new_latest_version_and_reverting_restores_the_old(database: Database) -> None:
    changed = PROBLEM_SOURCE + "# tweak\n"
    with database.session() as session:
        v1 = upsert_problem(session, new_problem()).problem
        v2 = upsert_problem(session, new_problem(source=changed))
        assert v2.created and v2.previous_latest_hash == v1.content_hash
        assert latest_problem(session, "add_relu") == v2.problem
        back = upsert_problem(session, new_problem())
        assert not back.created and back.problem.id == v1.id
        latest = latest_problem(session, "add_relu")
        assert latest is not None and latest.id == v1.id
        assert [p.name for p in list_latest_problems(session)] == ["add_relu"]
        old = problem_version(session, "add_relu", v2.problem.content_hash[:10])
        assert old is not None and old.id == v2.problem.id


def test_listing_filters_by_suite_and_keeps_metadata(database: Database) -> None:
    with database.session() as session:
        upsert_problem(session, new_problem("a", suite="cpu"))
        upsert_problem(session, new_problem("b", suite="level1", device="cuda"))
        cpu = list_latest_problems(session, "cpu")
        everything = list_latest_problems(session)
    assert [p.name for p in cpu] == ["a"]
    assert {p.name for p in everything} == {"a", "b"}
    assert cpu[0].meta.tags == ("x",) and cpu[0].meta.flops == 2e6 and cpu[0].meta.input_shapes is None


def test_memory_is_kept_with_the_shapes_and_a_note_counts_as_looked_at(database: Database) -> None:
    need = ProblemMemoryNeed(inputs=1, weights=2, outputs=3, oracle=4, comparison=5, total=15, least=10)
    with database.session() as session:
        a = upsert_problem(session, new_problem("a")).problem
        b = upsert_problem(session, new_problem("b")).problem
        assert {p.name for p in problems_without_shapes(session)} == {"a", "b"}
        set_input_shapes(session, a.id, ("float32[2]",), need)
        set_input_shapes(session, b.id, (), None, "not estimated")
        assert problems_without_shapes(session) == []
        shown = latest_problem(session, "a")
        noted = latest_problem(session, "b")
    assert shown is not None and shown.meta.memory == need and shown.meta.input_shapes == ("float32[2]",)
    assert noted is not None and noted.meta.memory is None and noted.meta.memory_note == "not estimated"
