"""A scale-out deployment on loopback for tests: the API (dispatch = celery) in a uvicorn thread, a fresh
Postgres schema, a real broker, and `kernelgrade worker` subprocesses that can be killed."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import httpx

from tests.service.servers import NO_PCH_NAME, NO_PCH_VALUE, wait_until

BROKERS = {
    "redis": os.environ.get("KERNELGRADE_TEST_REDIS_URL", "redis://127.0.0.1:6379/7"),
    "rabbitmq": os.environ.get("KERNELGRADE_TEST_AMQP_URL", "amqp://guest:guest@127.0.0.1:5672//"),
}
# A worker imports torch and celery and connects to the broker: seconds, more on a loaded 2-core machine.
WORKER_START_S = 90.0
# Short leases so that a killed worker's job is taken over within seconds (heartbeat and reaper: 1 s).
TEST_LEASE_S = 3.0
# A fast CPU job takes seconds on an idle 2-core machine but was seen taking 30 s when that machine was
# shared with compiles; ten minutes for twenty of them on two judges still fails a job that is really lost.
GRADING_S = 600.0
# SIGTERM lets a worker finish its task (warm shutdown); a fast CPU job takes seconds.
WORKER_STOP_S = 30.0


def broker_unavailable(url: str) -> str | None:
    parsed = urlparse(url)
    try:
        with socket.create_connection((parsed.hostname or "127.0.0.1", parsed.port or 0), timeout=3):
            return None
    except OSError as exc:
        return f"no broker at {url}: {exc}"


@dataclass
class WorkerProcess:
    name: str
    log_path: Path
    process: subprocess.Popen[bytes]

    @property
    def pid(self) -> int:
        return self.process.pid

    def graded(self) -> list[int]:
        """Evaluation ids this worker recorded a result for (from its log)."""
        ids = []
        for line in self.log().splitlines():
            if ": evaluation " in line and " -> " in line:
                ids.append(int(line.split(": evaluation ")[1].split(" ")[0]))
        return ids

    def kill(self) -> None:
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(WORKER_STOP_S)

    def stop(self) -> None:
        if self.process.poll() is not None:
            return
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(WORKER_STOP_S)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(WORKER_STOP_S)

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")


@dataclass
class Cluster:
    folder: Path
    database_url: str
    broker_url: str
    api: httpx.Client
    env_overrides: dict[str, str] = field(default_factory=dict)
    workers: list[WorkerProcess] = field(default_factory=list)

    def worker_env(self, name: str) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("KERNELGRADE_")}
        env.update({"KERNELGRADE_DATA_DIR": str(self.folder / name), "KERNELGRADE_DATABASE_URL": self.database_url,
                    NO_PCH_NAME: NO_PCH_VALUE,
                    "KERNELGRADE_BROKER_URL": self.broker_url, "KERNELGRADE_DISPATCH": "celery",
                    "KERNELGRADE_TIMING_PROFILE": "fast", "KERNELGRADE_LEASE_SECONDS": str(TEST_LEASE_S),
                    "KERNELGRADE_LOG_LEVEL": "info", **self.env_overrides})
        return env

    def start_worker(self, name: str, *, crashing: bool = False, wait: bool = True) -> WorkerProcess:
        module = "tests.scaleout.crashing_worker" if crashing else "kernelgrade.cli"
        command = [sys.executable, "-m", module] + ([] if crashing else ["worker"])
        log_path = self.folder / f"{name}-{len(self.workers)}.log"
        with log_path.open("ab") as log:
            process = subprocess.Popen(command, env=self.worker_env(name), stdout=log, stderr=subprocess.STDOUT,
                                       cwd=Path(__file__).resolve().parents[2])
        worker = WorkerProcess(name, log_path, process)
        self.workers.append(worker)
        if wait:
            wait_until(lambda: self._listening(worker), WORKER_START_S, f"worker {name} to start\n{worker.log()}")
        return worker

    def _listening(self, worker: WorkerProcess) -> bool:
        if worker.process.poll() is not None:
            raise AssertionError(f"worker {worker.name} exited with {worker.process.returncode}:\n{worker.log()}")
        return " ready." in worker.log() and any(w["pid"] == worker.pid for w in self.workers_listed())

    def workers_listed(self) -> list[dict[str, Any]]:
        listed: list[dict[str, Any]] = self.api.get("/v1/workers").json()["workers"]
        return listed

    def submit(self, source: str) -> dict[str, Any]:
        response = self.api.post("/v1/submissions", json={"problem": "add_relu", "source": source})
        assert response.status_code in (200, 201), response.text
        body: dict[str, Any] = response.json()
        return body

    def evaluation(self, submission_id: int) -> dict[str, Any]:
        evaluation: dict[str, Any] = self.api.get(f"/v1/submissions/{submission_id}").json()["evaluation"]
        return evaluation

    def wait_done(self, submission_ids: list[int], timeout: float = GRADING_S) -> list[dict[str, Any]]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            found = [self.evaluation(i) for i in submission_ids]
            if all(e["status"] == "done" for e in found):
                return found
            time.sleep(0.5)
        logs = "\n".join(f"--- {w.name} ---\n{w.log()[-3000:]}" for w in self.workers)
        raise AssertionError(f"not graded in {timeout:.0f} s: {[e['status'] for e in found]}\n{logs}")

    def stop(self) -> None:
        for worker in self.workers:
            worker.stop()
