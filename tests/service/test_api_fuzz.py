"""Schemathesis against a real `kernelgrade serve`: the coverage and fuzzing phases with every check, so that
no generated request makes a server error and every response matches the OpenAPI document (status, schema,
content type, headers, Allow, auth enforcement).

Two deployments: the embedded default (SQLite, open mode: the caller is the local admin, so every handler is
reached) and a keyed one on Postgres (a submitter key, so 401/403 and the key checks are exercised).

The servers run without judges (KERNELGRADE_LOCAL_JUDGES=0): the fuzzer queues hundreds of generated
submissions, and an embedded CPU judge would go on compiling them for many minutes after the run (about 20 s
each here). What this test checks is the HTTP edge; grading is covered by the end-to-end tests. The queued
jobs stay in the test's throwaway database.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest

from kernelgrade.storage.database import Database
from tests.service.keys import make_key
from tests.service.servers import ServeProcess
from tests.storage.databases import fresh_database_url

pytestmark = pytest.mark.fuzz

REPOSITORY = Path(__file__).parents[2]
CONFIG = Path(__file__).parent / "fuzz" / "schemathesis.toml"
HOOKS = "tests.service.fuzz.hooks"
# Per operation in the fuzzing phase (the coverage phase derives its own cases from the schema): enough to find
# what the first 387 cases of an unbounded run found, while one run stays under a minute on a 2-core machine.
MAX_EXAMPLES = 100
# A run takes 20-40 s here; the limit only stops a hung run from holding CI.
RUN_LIMIT_S = 420
# Each request is answered in milliseconds; a slow one means a stuck server, which should fail the run.
REQUEST_TIMEOUT_S = 30
API_ONLY = {"KERNELGRADE_LOCAL_JUDGES": "0"}


@pytest.fixture
def open_server(tmp_path: Path) -> Iterator[ServeProcess]:
    server = ServeProcess(tmp_path, {**API_ONLY, "KERNELGRADE_DATABASE_URL": f"sqlite:///{tmp_path / 'kg.db'}"})
    try:
        yield server.start()
    finally:
        server.stop()


@pytest.fixture
def keyed_server(tmp_path: Path) -> Iterator[tuple[ServeProcess, str]]:
    with fresh_database_url("postgres", tmp_path) as url:
        # A limit the run never reaches: requests pass through the shared rate limiter without being refused.
        server = ServeProcess(tmp_path, {**API_ONLY, "KERNELGRADE_DATABASE_URL": url, "KERNELGRADE_OPEN_MODE": "off",
                                         "KERNELGRADE_RATE_LIMIT_PER_MINUTE": "1000000",
                                         "KERNELGRADE_QUOTA_PER_DAY": "1000000"})
        try:
            server.start()
            database = Database.connect(url)
            try:
                key = make_key(database, "fuzzer")
            finally:
                database.dispose()
            yield server, key
        finally:
            server.stop()


def test_schemathesis_finds_nothing_in_open_mode_on_sqlite(open_server: ServeProcess, tmp_path: Path) -> None:
    generated = run_schemathesis(open_server, tmp_path, headers={})
    assert generated >= 1000


def test_schemathesis_finds_nothing_with_a_key_on_postgres(keyed_server: tuple[ServeProcess, str],
                                                           tmp_path: Path) -> None:
    server, key = keyed_server
    generated = run_schemathesis(server, tmp_path, headers={"X-API-Key": key})
    assert generated >= 1000


def run_schemathesis(server: ServeProcess, folder: Path, headers: Mapping[str, str]) -> int:
    """Run the CLI; fail with its report unless every case passed every check. Returns the cases generated."""
    command = [str(Path(sys.executable).parent / "schemathesis"), "--config-file", str(CONFIG), "run",
               f"{server.url}/openapi.json", "--phases=coverage,fuzzing", "--checks=all",
               f"--max-examples={MAX_EXAMPLES}", "--generation-deterministic", "--workers=1",
               f"--request-timeout={REQUEST_TIMEOUT_S}", "--no-color",
               "--report=junit", f"--report-junit-path={folder / 'schemathesis-junit.xml'}"]
    for name, value in headers.items():
        command += ["--header", f"{name}: {value}"]
    env = {**os.environ, "SCHEMATHESIS_HOOKS": HOOKS,
           "PYTHONPATH": os.pathsep.join(filter(None, [str(REPOSITORY), os.environ.get("PYTHONPATH")]))}
    done = subprocess.run(command, cwd=folder, env=env, capture_output=True, text=True, timeout=RUN_LIMIT_S,
                          check=False)
    report = done.stdout[-12000:] + done.stderr[-3000:]
    assert done.returncode == 0, f"schemathesis found problems:\n{report}\n--- server log ---\n{server.log()}"
    counted = re.search(r"(\d+) generated", done.stdout)
    assert counted is not None, report
    print(report[-1500:])  # the summary, in the CI log with -rA or on failure
    return int(counted.group(1))
