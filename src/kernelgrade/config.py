"""Settings from the environment (KERNELGRADE_*). The only module that reads os.environ.

Nothing here runs at import time: call Settings.from_env() where settings are needed.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

PREFIX = "KERNELGRADE_"


def _default_data_dir() -> Path:
    return Path.home() / ".local" / "share" / "kernelgrade"


@dataclass(frozen=True)
class Settings:
    # Where the SQLite database, the compile cache and job work dirs live.
    data_dir: Path = field(default_factory=_default_data_dir)
    # Empty: a SQLite file in data_dir. Otherwise any SQLAlchemy URL (postgresql+psycopg://...).
    database_url: str = ""
    host: str = "127.0.0.1"
    port: int = 8000
    # Mixed into the seeds of secret correctness trials and timing inputs; keep it private per deployment.
    seed_secret: str = ""
    # auto (the strongest that works here: bwrap, else unshare) | bwrap | unshare | none
    sandbox: str = "auto"
    # The weakest sandbox level the operator accepts: none < unshare < bwrap. `none` is accepted only
    # together with allow_unsandboxed.
    sandbox_minimum: str = "none"
    # The explicit opt-out that lets submissions run with no sandbox at all (KERNELGRADE_SANDBOX=none, or
    # auto where no sandbox works): they can then read what the service's user can read and reach local
    # servers. Without it, serve, worker and eval refuse to run submissions unsandboxed.
    allow_unsandboxed: bool = False
    # local | celery
    dispatch: str = "local"
    broker_url: str = "redis://127.0.0.1:6379/0"
    # Prepended to every queue name, so deployments (or concurrent test runs) can share one broker.
    queue_prefix: str = ""
    # MAX_JOBS of one build (ninja's parallel compiler processes). A load_inline build has two or three
    # translation units, so more than that gains nothing; the compile-ahead may lower it (build_slots.py).
    compile_jobs: int = 4
    # Concurrent compile-ahead builds in the embedded worker pool (they overlap the device stage of other jobs).
    # 0: as many as the host holds beside its GPU judges (cores and memory; worker/build_slots.py), and
    # one on a CPU-only pool. A positive value is taken as given.
    compile_workers: int = 0
    # Physical cores set aside for each GPU judge's timing loop and run child, away from builds (worker/cores.py):
    # -1 picks 2 where the host keeps at least 2 for builds beside them; 0 places nothing.
    measure_cores: int = -1
    # Compile load_inline's generated main.cpp against a precompiled torch/extension.h, built by the judge once
    # per compiler, torch version and flag variant under the cache dir (about 0.8 GB each). CPU builds only, so far.
    precompiled_headers: bool = True
    # Build CUDA sources without their `#include <torch/extension.h>` first, and as given where that fails: about
    # half of nvcc's time (evaluator/child/lean_header.py). Off: every build exactly as the submission asks.
    lean_cuda_header: bool = True
    # A job is tried at most this many times before it is failed with the reason.
    max_attempts: int = 3
    # A worker renews its lease on a job every lease_seconds / 3; an expired lease means the worker died.
    lease_seconds: float = 60.0
    # Open mode: no API key needed. Defaults to on when bound to loopback.
    open_mode: str = "auto"
    admin_key: str = ""
    rate_limit_per_minute: int = 120
    quota_per_day: int = 5000
    max_source_bytes: int = 512 * 1024
    # A whole request body (a batch carries several sources, JSON-escaped) may be at most this large.
    max_request_bytes: int = 16 * 1024 * 1024
    # Submissions in one POST /v1/submissions/batch.
    max_batch: int = 32
    log_level: str = "info"
    # standard: the full protocol of docs/timing.md. fast: fewer trials and a short timing loop, for tests and
    # demos on small machines; results say which parameters were used.
    timing_profile: str = "standard"
    # Also time torch.compile of the reference and report the speedup against it: auto | on | off. A
    # measurement costs an inductor compile (up to minutes) plus a timing loop, once per problem version,
    # device class and torch version; auto measures under the standard profile only, so that the fast
    # profile of tests and demos stays fast.
    compiled_baseline: str = "auto"
    # A stored measurement is reused this long, then measured again: it drifts with drivers, clocks and
    # host load that the key does not capture, and a failed one is retried at this pace (a week).
    compiled_baseline_max_age_hours: float = 168.0
    # Judges of the embedded pool: -1 = one per visible GPU, or one CPU judge when there is none; 0 = no
    # embedded pool (API only, workers run elsewhere).
    local_judges: int = -1
    # Run children each GPU judge keeps started and warm (torch imported, device context made) for the next
    # submissions, and whether it keeps references with their expected outputs between evaluations. 0: start
    # each child on demand and keep nothing, as a one-off `kernelgrade eval` does. Three, because a start (3-6 s
    # under a sandbox, its device warm-up held back while the judge times) outlasts two small problems'
    # evaluations: on an H100, back-to-back jobs waited 0.33 s per verdict (mean) for theirs with two and
    # 0.15 s with three, side by side. Each spare holds a CUDA context and a torch process's host memory. A
    # CPU judge keeps at most one (its spares start one at a time, beside builds on the same cores).
    warm_children: int = 3
    # A lock file every judge of the host opens: held around CPU measurements and CPU run children's starts,
    # so that judges in separate processes (workers started side by side) keep out of each other's timing
    # (evaluator/host/host_lock.py). In the temp dir, which all of a host's workers share whatever their
    # data dirs.
    host_lock: Path = field(default_factory=lambda: Path(tempfile.gettempdir()) / "kernelgrade-cpu-measure.lock")
    # An idle judge looks for queued jobs this often when nothing wakes it (jobs queued by another process).
    poll_seconds: float = 2.0
    # Where `kernelgrade submit` sends submissions; empty: http://{host}:{port}.
    server_url: str = ""
    # The key `kernelgrade submit` sends (X-API-Key); empty in open mode.
    api_key: str = ""
    # dispatch = celery: a job still queued this long after its task was sent is sent again, in case the
    # broker lost the task. Five minutes: more than a job waits behind the one or two ahead of it on an
    # unbacklogged judge (a GPU job compiles and runs in a minute or two), so a healthy service sends nothing
    # twice, and a lost task is found within minutes. Longer waits (a backlog) back off (storage.lease_reaper).
    resend_queued_seconds: float = 300.0

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, **overrides: Any) -> Settings:
        env = os.environ if environ is None else environ
        values: dict[str, Any] = {}
        for f in fields(cls):
            raw = env.get(PREFIX + f.name.upper())
            if raw is not None:
                values[f.name] = _parse(f.type, raw)
        return replace(cls(**values), **overrides)

    @property
    def cache_dir(self) -> Path:
        return self.data_dir / "cache"

    @property
    def work_root(self) -> Path:
        return self.data_dir / "work"

    @property
    def resolved_database_url(self) -> str:
        return self.database_url or f"sqlite:///{self.data_dir / 'kernelgrade.db'}"

    @property
    def resolved_server_url(self) -> str:
        return self.server_url.rstrip("/") or f"http://{self.host}:{self.port}"

    @property
    def measures_compiled_baseline(self) -> bool:
        if self.compiled_baseline in ("auto", ""):
            return self.timing_profile != "fast"
        return _truthy(self.compiled_baseline)

    @property
    def is_open(self) -> bool:
        if self.open_mode in ("auto", ""):
            return self.host in ("127.0.0.1", "localhost", "::1")
        return _truthy(self.open_mode)


def _truthy(value: str) -> bool:
    return value.lower() in ("1", "true", "yes", "on")


def _parse(kind: Any, raw: str) -> Any:
    name = kind if isinstance(kind, str) else getattr(kind, "__name__", "")
    if name == "Path":
        return Path(raw).expanduser()
    if name == "int":
        return int(raw)
    if name == "float":
        return float(raw)
    if name == "bool":
        return _truthy(raw)
    return raw
