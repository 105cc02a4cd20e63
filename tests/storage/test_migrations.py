"""The shipped migrations create exactly the schema the models describe, on both backends."""

from __future__ import annotations

from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import inspect, text

from kernelgrade.storage.database import Database
from kernelgrade.storage.migrate import alembic_config, current_revision, head_revision, upgrade
from kernelgrade.storage.models import Base
from kernelgrade.storage.submissions import get_submission
from tests.storage.builders import add_problem, add_submission, grade


def test_migrations_match_the_models(database: Database) -> None:
    assert current_revision(database) == head_revision()
    with database.engine.connect() as connection:
        differences = compare_metadata(MigrationContext.configure(connection, opts={"compare_type": True}),
                                       Base.metadata)
    assert differences == []


def test_upgrade_is_idempotent_and_downgrade_removes_everything(database: Database) -> None:
    assert upgrade(database) == head_revision()
    command.downgrade(alembic_config(database), "base")
    assert set(inspect(database.engine).get_table_names()) <= {"alembic_version"}
    assert upgrade(database) == head_revision()
    assert {"problems", "submissions", "evaluations", "api_keys", "workers"} <= set(
        inspect(database.engine).get_table_names())


def test_0002_keeps_the_results_of_0001_and_adds_the_baseline_columns(database: Database) -> None:
    problem = add_problem(database)
    view = add_submission(database, problem)
    command.downgrade(alembic_config(database), "0001")
    assert "compiled_baselines" not in inspect(database.engine).get_table_names()
    upgrade(database)
    assert {"compiled_baselines"} <= set(inspect(database.engine).get_table_names())
    grade(database, view, "correct", 2.0, speedup_vs_compiled=0.8)
    with database.session() as session:
        found = get_submission(session, view.submission.id)
    assert found is not None and found.evaluation is not None
    assert found.evaluation.speedup == 2.0 and found.evaluation.speedup_vs_compiled == 0.8


def test_sqlite_runs_in_wal_mode_with_foreign_keys(tmp_path: object) -> None:
    database = Database.connect(f"sqlite:///{tmp_path}/wal.db")
    with database.engine.connect() as connection:
        assert connection.execute(text("PRAGMA journal_mode")).scalar() == "wal"
        assert connection.execute(text("PRAGMA foreign_keys")).scalar() == 1
    database.dispose()
