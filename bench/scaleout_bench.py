"""Scale-out throughput: CPU submissions graded per minute with one and with two `kernelgrade worker`
processes, and the time from submit to verdict (idle cluster, and under the batch).

    .venv/bin/python bench/scaleout_bench.py [--jobs 8] [--broker redis://127.0.0.1:6379/7]

Each run: a fresh schema in the Postgres at --postgres-url, `kernelgrade serve` with dispatch = celery and
no embedded judges, N workers (CPU device class, "fast" timing profile), then --jobs distinct correct
add_relu submissions sent at once. Workers, API and client share the machine: on a small machine the
numbers are a floor, and two workers on two cores cannot double one worker's rate.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import psycopg
from psycopg import sql

from ports import free_port

# `kernelgrade serve` and each worker import torch before they are ready: seconds, more under load.
START_S = 120.0
# A batch of fast CPU jobs on a 2-core machine: minutes at worst.
GRADING_S = 900.0
SOURCE = ("# bench {n}\nimport torch\nimport torch.nn as nn\n\n\nclass ModelNew(nn.Module):\n"
          "    def forward(self, a, b):\n        return torch.clamp_min(a + b, 0.0)\n")


@contextmanager
def fresh_schema(postgres_url: str) -> Iterator[str]:
    schema = f"kg_bench_{uuid.uuid4().hex[:10]}"
    libpq = postgres_url.replace("postgresql+psycopg://", "postgresql://")
    with psycopg.connect(libpq, autocommit=True) as connection:
        connection.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(schema)))
    try:
        yield f"{postgres_url}?options=-csearch_path%3D{schema}"
    finally:
        with psycopg.connect(libpq, autocommit=True) as connection:
            connection.execute(sql.SQL("DROP SCHEMA {} CASCADE").format(sql.Identifier(schema)))


def environment(folder: Path, url: str, broker: str, port: int) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("KERNELGRADE_")}
    env.update({"KERNELGRADE_DATA_DIR": str(folder), "KERNELGRADE_DATABASE_URL": url, "KERNELGRADE_BROKER_URL": broker,
                "KERNELGRADE_DISPATCH": "celery", "KERNELGRADE_LOCAL_JUDGES": "0", "KERNELGRADE_PORT": str(port),
                "KERNELGRADE_TIMING_PROFILE": "fast", "KERNELGRADE_LOG_LEVEL": "warning",
                # The client polls every job several times a second.
                "KERNELGRADE_RATE_LIMIT_PER_MINUTE": "0",
                "KERNELGRADE_QUEUE_PREFIX": f"kg-bench-{uuid.uuid4().hex[:8]}-"})
    return env


def wait_for(client: httpx.Client, workers: int) -> None:
    deadline = time.monotonic() + START_S
    while time.monotonic() < deadline:
        try:
            listed = client.get("/v1/workers").json()["workers"]
            if sum(1 for w in listed if w["state"] != "offline") >= workers:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.5)
    raise SystemExit(f"the API and {workers} worker(s) did not come up in {START_S:.0f} s")


def submit_and_wait(client: httpx.Client, first: int, count: int) -> list[float]:
    """Submit `count` sources at once; the seconds from each submit to its verdict."""
    sent = {}
    for n in range(first, first + count):
        response = client.post("/v1/submissions", json={"problem": "add_relu", "source": SOURCE.format(n=n)})
        response.raise_for_status()
        sent[response.json()["id"]] = time.monotonic()
    waited: dict[int, float] = {}
    deadline = time.monotonic() + GRADING_S
    while len(waited) < count and time.monotonic() < deadline:
        for submission_id in set(sent) - set(waited):
            evaluation = client.get(f"/v1/submissions/{submission_id}").json()["evaluation"]
            if evaluation["status"] == "done":
                assert evaluation["verdict"] == "correct", evaluation
                waited[submission_id] = time.monotonic() - sent[submission_id]
        time.sleep(0.2)
    if len(waited) < count:
        raise SystemExit(f"only {len(waited)} of {count} graded in {GRADING_S:.0f} s")
    return list(waited.values())


def run(workers: int, args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory() as tmp, fresh_schema(args.postgres_url) as url:
        port = free_port()
        env = environment(Path(tmp), url, args.broker, port)
        kernelgrade = str(Path(sys.executable).parent / "kernelgrade")
        processes = [subprocess.Popen([kernelgrade, "serve"], env=env)]
        try:
            with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=30.0) as client:
                wait_for(client, 0)  # the API has applied the migrations the workers rely on
                processes += [subprocess.Popen([kernelgrade, "worker"], env=env) for _ in range(workers)]
                wait_for(client, workers)
                idle = submit_and_wait(client, 0, 1)[0]
                started = time.monotonic()
                latencies = submit_and_wait(client, 1, args.jobs)
                elapsed = time.monotonic() - started
        finally:
            for process in processes:
                process.terminate()
            for process in processes:
                process.wait(60)
    print(f"{workers} worker(s): {args.jobs} jobs in {elapsed:.1f} s = {60 * args.jobs / elapsed:.1f} jobs/min;"
          f" submit to verdict: idle {idle:.1f} s, in the batch median {statistics.median(latencies):.1f} s,"
          f" max {max(latencies):.1f} s", flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--jobs", type=int, default=8)
    parser.add_argument("--broker", default="redis://127.0.0.1:6379/7")
    parser.add_argument("--postgres-url", default="postgresql+psycopg://postgres@127.0.0.1:5432/test")
    args = parser.parse_args()
    for workers in (1, 2):
        run(workers, args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
