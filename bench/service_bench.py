"""Service throughput: leaderboard reads per second (p50/p99 latency) with 100,000 stored evaluations, and
submissions accepted per second, on SQLite and on Postgres, through the real HTTP API.

    .venv/bin/python bench/service_bench.py [--evaluations 100000] [--seconds 10] [--threads 4]

For each backend: a fresh database (a SQLite file; a new schema in the Postgres at --postgres-url), the
migrations, 50 synthetic problems and N graded results bulk-inserted through kernelgrade.storage, then
`kernelgrade serve` (API only: KERNELGRADE_LOCAL_JUDGES=0) in a child process, hit with httpx from a few
threads for a bounded time. Client and server share the machine, so on a small machine the numbers are a
floor, not the server's ceiling.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import random
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

import httpx
import psycopg
from psycopg import sql

from kernelgrade.storage.board_tables import rebuild
from kernelgrade.storage.bulk import GradedResult, insert_results
from kernelgrade.storage.clock import utcnow
from kernelgrade.storage.database import Database
from kernelgrade.storage.migrate import upgrade
from kernelgrade.storage.problems import upsert_problem
from kernelgrade.storage.records import NewProblem, ProblemMeta
from ports import free_port

PROBLEMS = 50
SUBMITTERS = 200
MODELS = 20
BATCH = 5000
# `kernelgrade serve` imports torch and applies migrations before it listens.
SERVER_START_S = 120.0
VERDICTS = (("correct", 0.6), ("incorrect", 0.25), ("flagged", 0.05), ("compile_error", 0.05), ("timeout", 0.05))


@dataclass(frozen=True)
class Measurement:
    name: str
    count: int
    errors: int
    seconds: float
    latencies_ms: list[float]

    def line(self) -> str:
        ordered = sorted(self.latencies_ms) or [0.0]
        p50 = statistics.median(ordered)
        p99 = ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))]
        return (f"{self.name:<34} {self.count / self.seconds:>9.1f}/s   p50 {p50:>7.1f} ms   p99 {p99:>7.1f} ms"
                f"   ({self.count} ok, {self.errors} errors)")


def synthetic_problem(index: int) -> NewProblem:
    source = f"# synthetic benchmark problem {index}\nclass Model: pass\ndef get_inputs(): return []\n" \
             "def get_init_inputs(): return []\n"
    meta = ProblemMeta(precision="fp32", precision_description="fp32", atol=1e-4, rtol=1e-4)
    return NewProblem(name=f"bench_{index:02d}", suite="bench", level=1, device_kind="cpu", source=source,
                      content_hash=hashlib.sha256(source.encode()).hexdigest(), meta=meta)


def synthetic_results(problem_ids: list[int], count: int, rng: random.Random) -> Iterator[GradedResult]:
    verdicts, weights = zip(*VERDICTS, strict=True)
    start = utcnow() - timedelta(days=30)
    for i in range(count):
        verdict = rng.choices(verdicts, weights)[0]
        speedup = rng.lognormvariate(0.0, 0.6) if verdict in ("correct", "flagged") else None
        source = f"# submission {i}\n"
        yield GradedResult(problem_id=rng.choice(problem_ids), submitter=f"user{rng.randrange(SUBMITTERS)}",
                           model=f"model{rng.randrange(MODELS)}", source=source,
                           source_hash=hashlib.sha256(source.encode()).hexdigest(), verdict=verdict, speedup=speedup,
                           reference_median_ms=2.0 if speedup else None,
                           candidate_median_ms=2.0 / speedup if speedup else None, device_class="cpu-x86_64",
                           finished_at=start + timedelta(seconds=i))


def populate(url: str, count: int) -> float:
    database = Database.connect(url)
    started = time.perf_counter()
    upgrade(database)
    with database.session() as session:
        ids = [upsert_problem(session, synthetic_problem(i)).problem.id for i in range(PROBLEMS)]
    rows = list(synthetic_results(ids, count, random.Random(7)))
    for offset in range(0, len(rows), BATCH):
        with database.session() as session:
            insert_results(session, rows[offset:offset + BATCH], rebuild_boards=False)
    with database.session() as session:
        rebuild(session, ids)
    database.dispose()
    return time.perf_counter() - started


@contextmanager
def server(url: str, data_dir: Path) -> Iterator[str]:
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("KERNELGRADE_")}
    env.update({"KERNELGRADE_DATABASE_URL": url, "KERNELGRADE_DATA_DIR": str(data_dir), "KERNELGRADE_PORT": str(port),
                "KERNELGRADE_LOCAL_JUDGES": "0", "KERNELGRADE_LOG_LEVEL": "warning"})
    log = (data_dir / "serve.log").open("wb")
    process = subprocess.Popen([str(Path(sys.executable).parent / "kernelgrade"), "serve"], env=env, stdout=log,
                               stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        wait_ready(base, process)
        yield base
    finally:
        process.terminate()
        process.wait(30)
        log.close()


def wait_ready(base: str, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + SERVER_START_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"kernelgrade serve exited with {process.returncode}")
        try:
            if httpx.get(base + "/v1/health", timeout=2.0).status_code == 200:
                return
        except httpx.HTTPError:
            time.sleep(0.2)
    raise RuntimeError("kernelgrade serve did not become ready")


def hammer(base: str, name: str, threads: int, seconds: float,
           request: Callable[[httpx.Client, random.Random, int], httpx.Response]) -> Measurement:
    latencies: list[float] = []
    errors = [0]
    lock = threading.Lock()
    stop_at = time.monotonic() + seconds

    def worker(index: int) -> None:
        rng = random.Random(index)
        mine: list[float] = []
        failed = 0
        with httpx.Client(base_url=base, timeout=30.0) as client:
            n = 0
            while time.monotonic() < stop_at:
                started = time.perf_counter()
                response = request(client, rng, index * 10_000_000 + n)
                n += 1
                if response.is_success:
                    mine.append((time.perf_counter() - started) * 1000.0)
                else:
                    failed += 1
        with lock:
            latencies.extend(mine)
            errors[0] += failed

    started = time.monotonic()
    pool = [threading.Thread(target=worker, args=(i,)) for i in range(threads)]
    for thread in pool:
        thread.start()
    for thread in pool:
        thread.join()
    return Measurement(name, len(latencies), errors[0], time.monotonic() - started, latencies)


def problem_board(client: httpx.Client, rng: random.Random, _n: int) -> httpx.Response:
    return client.get(f"/v1/leaderboards/bench_{rng.randrange(PROBLEMS):02d}")


def suite_board(client: httpx.Client, _rng: random.Random, _n: int) -> httpx.Response:
    return client.get("/v1/leaderboards", params={"suite": "bench"})


def submission(client: httpx.Client, rng: random.Random, n: int) -> httpx.Response:
    source = f"import torch\nclass ModelNew(torch.nn.Module):\n    pass\n# {n} {uuid.uuid4().hex}\n"
    return client.post("/v1/submissions", json={"problem": f"bench_{rng.randrange(PROBLEMS):02d}", "source": source,
                                                "submitter": f"bench{n % 7}", "model": "bench"})


@contextmanager
def database_url(backend: str, folder: Path, postgres_url: str) -> Iterator[str]:
    if backend == "sqlite":
        yield f"sqlite:///{folder / 'bench.db'}"
        return
    schema = f"kg_bench_{uuid.uuid4().hex[:10]}"
    libpq = postgres_url.replace("postgresql+psycopg://", "postgresql://")
    with psycopg.connect(libpq, autocommit=True) as connection:
        connection.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(schema)))
    try:
        yield f"{postgres_url}{'&' if '?' in postgres_url else '?'}options=-csearch_path%3D{schema}"
    finally:
        with psycopg.connect(libpq, autocommit=True) as connection:
            connection.execute(sql.SQL("DROP SCHEMA {} CASCADE").format(sql.Identifier(schema)))


def run_backend(backend: str, args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory(prefix=f"kg-bench-{backend}-") as tmp, \
            database_url(backend, Path(tmp), args.postgres_url) as url:
        loaded = populate(url, args.evaluations)
        print(f"\n== {backend}: {args.evaluations} evaluations over {PROBLEMS} problems,"
              f" bulk-inserted in {loaded:.1f} s")
        with server(url, Path(tmp)) as base:
            for name, request in (("GET /v1/leaderboards/{problem}", problem_board),
                                  ("GET /v1/leaderboards?suite=bench", suite_board),
                                  ("POST /v1/submissions", submission)):
                print(hammer(base, name, args.threads, args.seconds, request).line(), flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--evaluations", type=int, default=100_000)
    parser.add_argument("--seconds", type=float, default=10.0, help="per measurement")
    parser.add_argument("--threads", type=int, default=4)
    parser.add_argument("--backends", default="sqlite,postgres")
    parser.add_argument("--postgres-url", default="postgresql+psycopg://postgres@127.0.0.1:5432/test")
    args = parser.parse_args()
    print(f"kernelgrade service bench: {os.cpu_count()} CPUs, {args.threads} client threads, {args.seconds:g} s each")
    for backend in args.backends.split(","):
        run_backend(backend.strip(), args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
