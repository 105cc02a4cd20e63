"""`kernelgrade serve` in a child process, and what bench/throughput.py asks of it over HTTP: register the cases'
problems, post a stream of submissions, wait for their verdicts and read each result's stage seconds."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx

from kernelgrade.evaluator.child import lean_header
from ports import free_port
from throughput_corpus import Expect, Submission

SRC = Path(__file__).resolve().parent.parent / "src"
# `kernelgrade serve` imports torch, applies migrations and starts a judge before it is ready; a loaded 2-core
# machine needs tens of seconds.
SERVER_START_S = 180.0
SERVER_STOP_S = 30.0
# Verdicts are read from the server's own timestamps, so the poll interval only decides when the bench stops.
POLL_S = 1.0
BATCH = 16  # at most KERNELGRADE_MAX_BATCH (32 by default) per POST /v1/submissions/batch
SUBMITTER = "throughput-bench"
# The server's loggers whose lines say a judge began or ended work off the verdicts' path (baselines, preparations).
OFF_PATH_LOGGERS = ("kernelgrade.worker.judge", "kernelgrade.worker.compiled_baselines",
                    "kernelgrade.worker.preparations")
# The stages a progress line names: enough to see a verdict's cost, short enough for one line.
TOP_STAGES = 3


@dataclass(frozen=True)
class Slice:
    """The part of the host a server runs on: one GPU (as CUDA_VISIBLE_DEVICES names it; None: every one this
    process sees) and its CPUs (empty: this process's). The server's judges place their children and threads
    within its CPUs (worker/cores.py reads the affinity it is given)."""

    gpu: str | None = None
    cpus: tuple[int, ...] = ()


@dataclass(frozen=True)
class Config:
    label: str
    env: Mapping[str, str]  # KERNELGRADE_* settings of this configuration
    src: Path | None = None  # the kernelgrade source the server runs (another checkout's src/); None: this one
    place: Slice = Slice()


@dataclass(frozen=True)
class Graded:
    """One verdict of the measured stream, as the API reported it."""

    case: str
    expect: Expect
    submission_id: int
    verdict: str
    failure_code: str | None
    created_s: float  # the evaluation's creation, claim by a judge and finish, seconds since the epoch (server clock)
    started_s: float
    finished_s: float
    stages: tuple[tuple[str, float], ...]  # the result's stage_seconds, in order
    wall_s: float | None  # the evaluation's own wall time (evaluate(), start to result); None from older servers
    speedup: float | None  # reference median / candidate median, where it was timed
    checks: tuple[tuple[str, str], ...]  # (check, what the result records for it)
    why: str = ""  # the failure's message, or the flags' details: what a mismatch is printed with
    # The messages of findings that explain what a verdict cost (NOTED): printed whatever the verdict.
    notes: tuple[str, ...] = ()


@contextmanager
def served(data_dir: Path, database: Path, settings: Mapping[str, str], src: Path | None = None,
           place: Slice = Slice(), label: str = "") -> Iterator[Service]:
    """`label`: what its progress lines start with, where several servers print at once."""
    data_dir.mkdir(parents=True, exist_ok=True)
    port = free_port()
    log_path = data_dir / f"serve-{port}.log"
    env = _server_env(data_dir, database, port, settings, src or SRC, place)
    with log_path.open("ab") as log:
        process = subprocess.Popen(server_command(place), env=env, stdout=log, stderr=subprocess.STDOUT)
    service = Service(f"http://127.0.0.1:{port}", process, log_path, label)
    try:
        service.wait_ready()
        yield service
    finally:
        service.stop()


def server_command(place: Slice) -> list[str]:
    return pinned(place.cpus, [sys.executable, "-m", "kernelgrade.cli", "serve"])


def pinned(cpus: tuple[int, ...], command: list[str]) -> list[str]:
    """`command` on `cpus` where there are any: set by taskset before the program starts, so every thread and
    child of it inherits them."""
    return ["taskset", "-c", ",".join(map(str, cpus)), *command] if cpus else command


def _server_env(data_dir: Path, database: Path, port: int, settings: Mapping[str, str], src: Path,
                place: Slice) -> dict[str, str]:
    # Only this run's settings: a KERNELGRADE_* variable of the caller's shell would change what is measured.
    env = {k: v for k, v in os.environ.items() if not k.startswith("KERNELGRADE_")}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(src), env.get("PYTHONPATH", "")) if p)
    env.update({"KERNELGRADE_DATA_DIR": str(data_dir), "KERNELGRADE_DATABASE_URL": f"sqlite:///{database}",
                "KERNELGRADE_HOST": "127.0.0.1", "KERNELGRADE_PORT": str(port), **settings})
    if place.gpu is not None:
        env["CUDA_VISIBLE_DEVICES"] = place.gpu
    return env


class Service:
    def __init__(self, url: str, process: subprocess.Popen[bytes], log_path: Path, label: str = "") -> None:
        self.url, self.process, self.log_path, self.label = url, process, log_path, label
        self.client = httpx.Client(base_url=url, timeout=60.0)
        self._log_read = 0  # how far off_path_work() has read the server's log

    def wait_ready(self) -> None:
        deadline = time.monotonic() + SERVER_START_S
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"kernelgrade serve exited with {self.process.returncode}:\n{self.log_tail()}")
            if self._judging():
                return
            time.sleep(0.25)
        raise RuntimeError(f"kernelgrade serve was not ready in {SERVER_START_S:.0f} s:\n{self.log_tail()}")

    def _judging(self) -> bool:
        try:
            health = self.client.get("/v1/health", timeout=2.0)
        except httpx.HTTPError:
            return False
        return health.status_code == 200 and int(health.json()["workers_online"]) >= 1

    def devices(self) -> int:
        """The devices this pool's judges grade on: its GPUs, however many judges share each (a worker's name ends
        in its judge's, gpu0 or gpu0.1 for a second judge on gpu0), or its one CPU judge."""
        workers = self._ok(self.client.get("/v1/workers"))["workers"]
        return len({w["name"].rpartition(":")[2].partition(".")[0] for w in workers})

    def register_problems(self, corpus: list[Submission]) -> None:
        """The cases' own problem files, posted as problems (open mode acts as the local admin)."""
        for problem in {s.problem.name: s.problem for s in corpus if not s.problem.builtin}.values():
            self._ok(self.client.post("/v1/problems", json={"name": problem.name, "source": problem.source,
                                                             "suite": "bench"}))

    def grade(self, corpus: list[Submission], force: bool, timeout_s: float, cut: bool = False) -> list[Graded]:
        """The corpus's verdicts, in its order. `cut`: past `timeout_s`, only those that came in by then (the
        rest may still be graded by the server) instead of an error."""
        ids = self.submit(corpus, force)
        bodies = self.wait(ids, timeout_s, cut)
        return [graded(s, bodies[i]) for s, i in zip(corpus, ids, strict=True) if i in bodies]

    def submit(self, corpus: list[Submission], force: bool) -> list[int]:
        ids: list[int] = []
        for start in range(0, len(corpus), BATCH):
            items = [{"problem": s.problem.name, "source": s.source, "submitter": SUBMITTER,
                      "model": s.case, "force": force} for s in corpus[start:start + BATCH]]
            for item in self._ok(self.client.post("/v1/submissions/batch", json={"submissions": items}))["items"]:
                if item["submission"] is None:
                    raise RuntimeError(f"a submission was refused: {item['error']}")
                ids.append(int(item["submission"]["id"]))
        return ids

    def wait(self, ids: list[int], timeout_s: float, cut: bool = False) -> dict[int, dict[str, Any]]:
        """Every submission's final body. Judges take jobs in order, so it asks for the oldest unfinished one
        until it is done, then the next: about one request per poll, whatever N is."""
        done: dict[int, dict[str, Any]] = {}
        started = time.monotonic()
        deadline = started + timeout_s
        for submission_id in ids:
            while (body := self._ok(self.client.get(f"/v1/submissions/{submission_id}")))["evaluation"]["status"] \
                    != "done":
                if time.monotonic() > deadline:
                    if not cut:
                        raise RuntimeError(f"no verdict for submission {submission_id} in {timeout_s:.0f} s")
                    done |= self._finished([i for i in ids if i not in done])
                    self._say(started, [f"cut at {timeout_s:.0f} s: {len(done)} of {len(ids)} verdicts in"])
                    return done
                self._say(started, self.off_path_work())
                time.sleep(POLL_S)
            done[submission_id] = body
            self._say(started, [*self.off_path_work(), f"{len(done)}/{len(ids)}: {_progress(body)}"])
        return done

    def _finished(self, ids: list[int]) -> dict[int, dict[str, Any]]:
        """The final bodies of those of `ids` graded by now."""
        bodies = {i: self._ok(self.client.get(f"/v1/submissions/{i}")) for i in ids}
        return {i: body for i, body in bodies.items() if body["evaluation"]["status"] == "done"}

    def _say(self, started: float, lines: list[str]) -> None:
        for line in lines:
            print(f"#   {self.label + ': ' if self.label else ''}at {time.monotonic() - started:.0f} s: {line}",
                  flush=True)

    def off_path_work(self) -> list[str]:
        """The judges' work off the verdicts' path that the server logged since the last call (torch.compile
        baselines, problems prepared): a verdict that waited for a judge busy with it shows between them."""
        if not self.log_path.exists():
            return []
        with self.log_path.open("rb") as log:
            log.seek(self._log_read)
            text = log.read()
        complete = text[:text.rfind(b"\n") + 1]
        self._log_read += len(complete)
        lines = complete.decode(errors="replace").splitlines()
        return [line.partition(": ")[2] for line in lines if any(f" {name}: " in line for name in OFF_PATH_LOGGERS)
                and (" torch.compile of " in line or " prepared " in line)]

    def _ok(self, response: httpx.Response) -> Any:
        if not response.is_success:
            raise RuntimeError(f"{response.request.method} {response.request.url.path}: {response.status_code}"
                               f" {response.text[:500]}")
        return response.json()

    def stop(self) -> None:
        self.client.close()
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(SERVER_STOP_S)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(SERVER_STOP_S)

    def log_tail(self) -> str:
        return self.log_path.read_text(errors="replace")[-4000:] if self.log_path.exists() else ""


def graded(submission: Submission, body: dict[str, Any]) -> Graded:
    evaluation = body["evaluation"]
    # The full result (stage seconds, trials, method) is shown to its submitter; open mode is the local admin.
    result = evaluation.get("result") or {}
    failure = evaluation.get("failure") or {}
    return Graded(case=submission.case, expect=submission.expect, submission_id=int(body["id"]),
                  verdict=str(evaluation["verdict"]), failure_code=failure.get("code"),
                  created_s=_epoch(evaluation["created_at"]), started_s=_epoch(evaluation["started_at"]),
                  finished_s=_epoch(evaluation["finished_at"]),
                  stages=tuple((str(label), float(s)) for label, s in result.get("stage_seconds", [])),
                  wall_s=float(result["wall_s"]) if result.get("wall_s") else None,
                  speedup=float(evaluation["speedup"]) if evaluation.get("speedup") else None,
                  checks=_checks(evaluation, result), why=_why(evaluation, failure), notes=_notes(evaluation))


def _progress(body: dict[str, Any]) -> str:
    """A verdict as it comes in, with its problem, its time in the judge and the stages that took most of it:
    a run cut short (a device call's limit) still says where its time went. A flagged or errored one also
    with its submission and why, which a pass that is not reported (the build pass) would otherwise lose."""
    evaluation = body["evaluation"]
    verdict = str(evaluation["verdict"])
    spent = _epoch(evaluation["finished_at"]) - _epoch(evaluation["started_at"])
    stages = sorted((evaluation.get("result") or {}).get("stage_seconds", []), key=lambda s: -s[1])
    largest = ", ".join(f"{label} {seconds:.1f}" for label, seconds in stages[:TOP_STAGES])
    line = f"{verdict} {body.get('problem')} ({spent:.1f} s in the judge: {largest or 'no stages'})"
    if verdict not in ("flagged", "error"):
        return line
    why = _why(evaluation, evaluation.get("failure") or {})
    return f"{line} (submission {body['id']}, {body.get('model')}): {why}"


def _why(evaluation: dict[str, Any], failure: dict[str, Any]) -> str:
    flags = [f"{f['code']}: {f.get('message', '')}" for f in evaluation.get("findings", []) if f["severity"] == "flag"]
    return str(failure.get("message") or "; ".join(flags))


# A second attempt doubles a verdict's device time, and only its message says where the first one ran out
# (the stage, the judge's peak); a stream's table shows no more than the count.
NOTED = frozenset({"graded_again_after_out_of_memory", "timing_sets_reduced"})


def _notes(evaluation: dict[str, Any]) -> tuple[str, ...]:
    return tuple(f"{f['code']}: {f.get('message', '')}" for f in evaluation.get("findings", []) if f["code"] in NOTED)


def _epoch(stamp: str) -> float:
    return datetime.fromisoformat(stamp).timestamp()


def _checks(evaluation: dict[str, Any], result: dict[str, Any]) -> tuple[tuple[str, str], ...]:
    """What this result says was checked and how: each a (check, value) pair, counted across the stream."""
    method = result.get("method") or {}
    trials = result.get("trials") or []
    secret = sum(1 for t in trials if t.get("secret"))
    found = [("sandbox", str((evaluation.get("environment") or {}).get("sandbox"))),
             ("precision policy", str(result.get("precision", "?"))),
             ("seed secret", str(result.get("seed_secret") or "-"))]
    if trials:
        found.append(("correctness trials run", f"{len(trials) - secret} public + {secret} secret"))
    if evaluation.get("timing_method"):
        found.append(("timing method", str(evaluation["timing_method"])))
        found.append(("timing inputs", f"{method.get('input_sets', '?')} input sets; {method.get('input_values')}"))
        # Its numbers (reps, age, drift) differ per verdict; the way it was timed is what is counted.
        found.append(("reference timed", re.sub(r"[-+]?\d+(\.\d+)?", "#", str(method.get("reference_placement")))))
    if method.get("l2_persisting"):
        found.append(("persisting L2", str(method["l2_persisting"])))
    # A hit also when the pool's compile-ahead thread built it while the judge was busy with others.
    found.append(("compile stage", "found the build cached" if result.get("compile_cache_hit") else "built it"))
    log = str(result.get("compile_log") or "")
    if lean_header.KEPT in log:
        found.append(("CUDA build", "lean"))
    elif lean_header.FELL_BACK in log:
        found.append(("CUDA build", "as given after a failed lean one"))
    extra = dict(result.get("extra") or [])
    if "reference_child" in extra:
        found.append(("reference's child for timing", str(extra["reference_child"])))
    # Where the trials' expected outputs came from: a prepared problem computes none.
    counts = [(source, extra.get(f"trials_{source}", "0")) for source in ("computed", "stored", "kept")]
    sources = [f"{count} {source}" for source, count in counts if count != "0"]
    if sources:
        found.append(("trials' expected outputs", ", ".join(sources)))
    on_host = [f"{stage} {extra[f'oracle_on_host_{stage}']}" for stage in ("correctness", "recheck")
               if f"oracle_on_host_{stage}" in extra]
    if on_host:
        found.append(("float64 oracle run on the host (calls)", ", ".join(on_host)))
    if "shared_region" in extra:  # its size differs by problem; how its copies ran is what is counted
        found.append(("shared region, judge's side", re.sub(r"^[\d.]+ [MG]iB, ", "", str(extra["shared_region"]))))
    found += [("finding", f"{f['severity']}: {f['code']}") for f in evaluation.get("findings", [])]
    return tuple(found)
