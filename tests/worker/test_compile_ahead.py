"""The compile-ahead on a real database: its threads take distinct queued jobs, and several build at once in
real sandboxed compile children, each job once."""

from __future__ import annotations

import subprocess
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from kernelgrade.evaluator import ChildSpec, Launcher
from kernelgrade.storage.database import Database
from kernelgrade.storage.jobs import Lease, claim_next
from kernelgrade.storage.problems import latest_problem
from kernelgrade.worker.build_slots import BuildSlots
from kernelgrade.worker.compile_ahead import CompileAhead
from kernelgrade.worker.sandboxing import settings_launcher
from tests.evaluator.test_integrity_engine import TORCH_SUBMISSION
from tests.service.conftest import add_builtin, base_settings
from tests.service.servers import wait_until
from tests.service.sources import variant
from tests.storage.builders import add_submission

CASES = Path(__file__).parents[1] / "cases"
# Two C++ builds side by side on a 2-core machine take about twice one build's 20 s; room for a loaded one.
BUILDS_S = 240.0


class CountingLauncher:
    """The real launcher, counting the compile children it starts and how many ran at once."""

    def __init__(self, inner: Launcher) -> None:
        self.inner, self.lock = inner, threading.Lock()
        self.started: list[subprocess.Popen[bytes]] = []
        self.most_at_once = 0

    @property
    def level(self) -> str:
        return self.inner.level

    def popen(self, spec: ChildSpec) -> subprocess.Popen[bytes]:
        process = self.inner.popen(spec)
        with self.lock:
            self.started.append(process)
            self.most_at_once = max(self.most_at_once, sum(p.poll() is None for p in self.started))
        return process


def _compile_ahead(database: Database, tmp_path: Path, database_url: str, workers: int,
                   launcher: Launcher | None = None) -> CompileAhead:
    settings = base_settings(tmp_path, database_url, poll_seconds=0.2)
    return CompileAhead(settings, database, launcher or settings_launcher(settings), ("cpu",), lambda: False,
                        threading.Event(), threading.Event(), BuildSlots(workers, 1, "test"))


def _queue(database: Database, sources: list[str]) -> list[int]:
    add_builtin(database)
    with database.session() as session:
        problem = latest_problem(session, "add_relu")
    assert problem is not None
    views = [add_submission(database, problem, source) for source in sources]
    return [v.evaluation.id for v in views if v.evaluation is not None]


def test_threads_take_distinct_jobs_until_none_is_left(database: Database, database_url: str,
                                                       tmp_path: Path) -> None:
    ids = _queue(database, [variant(i) for i in range(6)])
    ahead = _compile_ahead(database, tmp_path, database_url, workers=4)
    with ThreadPoolExecutor(4) as pool:
        taken = [job.evaluation_id for job in pool.map(lambda _: ahead.take_next(), range(6)) if job is not None]
    assert sorted(taken) == sorted(ids)
    assert ahead.take_next() is None  # all six taken, none given twice


def test_jobs_whose_builds_ended_are_offered_first_until_they_are_claimed(database: Database, database_url: str,
                                                                        tmp_path: Path) -> None:
    """Submissions without a build of their own end at once; the judges claim them first (storage/jobs.py)."""
    ids = _queue(database, [TORCH_SUBMISSION + f"\n# variant {i}\n" for i in range(2)])
    ahead = _compile_ahead(database, tmp_path, database_url, workers=1)
    ahead.start()
    try:
        wait_until(lambda: ahead.built.ids() == set(ids), BUILDS_S, "both jobs through compile-ahead")
    finally:
        ahead.stopping.set()
        ahead.wake.set()
        ahead.threads[0].join(BUILDS_S)
    with database.session() as session:
        claimed = claim_next(session, Lease("judge", 30.0), {"cpu": "cpu-test"}, 3, preferred=ahead.built.ids())
    assert claimed is not None and claimed.evaluation_id == ids[0]
    assert ahead.take_next() is None and ahead.built.ids() == {ids[1]}  # the claimed one is forgotten


@pytest.mark.slow
@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_two_workers_build_two_submissions_at_once_each_once(database: Database, database_url: str,
                                                             tmp_path: Path) -> None:
    base = (CASES / "cpu_correct" / "submission.py").read_text()
    anchor = "#include <torch/extension.h>\n"
    _queue(database, [base.replace(anchor, f"{anchor}// variant {i}\n") for i in range(2)])
    settings = base_settings(tmp_path, database_url)
    launcher = CountingLauncher(settings_launcher(settings))
    ahead = _compile_ahead(database, tmp_path, database_url, workers=2, launcher=launcher)
    ahead.start()
    try:
        wait_until(lambda: len(list((tmp_path / "cache" / "builds").glob("*/status.json"))) == 2, BUILDS_S,
                   "both builds")
    finally:
        ahead.stopping.set()
        ahead.wake.set()
        for thread in ahead.threads:
            thread.join(BUILDS_S)
    assert len(launcher.started) == 2 and launcher.most_at_once == 2
    assert all(list(entry.glob("ext/*/*.so")) for entry in (tmp_path / "cache" / "builds").iterdir())
