"""Settings from the environment (KERNELGRADE_*). The only module that reads os.environ.

Nothing here runs at import time: call Settings.from_env() where settings are needed. Every field is
validated where it is declared, so a bad value fails at startup with a SettingsError that names the
variable, the value and what is accepted. `Settings(...)` itself is the defaults and what it is given;
only from_env() reads the environment.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Literal, Self, get_args, get_origin

import annotated_types
from pydantic import AfterValidator, BeforeValidator, Field, Strict, ValidationError
from pydantic.fields import FieldInfo
from pydantic_settings import BaseSettings, EnvSettingsSource, PydanticBaseSettingsSource, SettingsConfigDict
from pydantic_settings.sources.utils import parse_env_vars

PREFIX = "KERNELGRADE_"

ON_WORDS = ("1", "true", "yes", "on")
OFF_WORDS = ("0", "false", "no", "off")
FLAG_ACCEPTED = "use on or off (also 1, true, yes / 0, false, no)"
SWITCH_ACCEPTED = "use auto, on or off (also 1, true, yes / 0, false, no)"


class SettingsError(ValueError):
    """A setting with a value that is not accepted; the message says which, and what would be."""


def _flag(value: object) -> object:
    """The spellings an operator may use for on and off, in any case; anything else is refused."""
    if isinstance(value, str):
        word = value.strip().lower()
        if word in ON_WORDS:
            return True
        if word in OFF_WORDS:
            return False
    return value


def _switch(value: object) -> object:
    """auto, or a flag's spelling for on or off; empty counts as auto."""
    if isinstance(value, str):
        word = value.strip().lower()
        if word in ("", "auto"):
            return "auto"
        flag = _flag(word)
        if isinstance(flag, bool):
            return "on" if flag else "off"
    return value


def _lower(value: object) -> object:
    return value.strip().lower() if isinstance(value, str) else value


def _default_data_dir() -> Path:
    return Path.home() / ".local" / "share" / "kernelgrade"


def _default_host_lock() -> Path:
    return Path(tempfile.gettempdir()) / "kernelgrade-cpu-measure.lock"


Flag = Annotated[bool, BeforeValidator(_flag), Strict()]
Switch = Annotated[Literal["auto", "on", "off"], BeforeValidator(_switch)]
ExpandedPath = Annotated[Path, AfterValidator(Path.expanduser)]
LogLevel = Annotated[Literal["debug", "info", "warning", "error", "critical"], BeforeValidator(_lower)]


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix=PREFIX, frozen=True, extra="forbid",
                                      # An empty variable counts as unset: every field keeps its default.
                                      env_ignore_empty=True)

    # Where the SQLite database, the compile cache and job work dirs live.
    data_dir: ExpandedPath = Field(default_factory=_default_data_dir)
    # Where job work dirs live instead (unset: data_dir/work). They hold what a job's children read and write:
    # a large problem's timing sets are gigabytes written for one evaluation and removed after it, which on a
    # disk's file system the host writes back meanwhile (1.9 GB/s beside a mixed stream on an H200 host). A
    # tmpfs (/dev/shm) keeps them in memory; every sandbox level binds a work dir there. There, what a child writes
    # to its files (outputs too large for its shared region) counts against its memory limit, never reclaimed.
    work_dir: ExpandedPath | None = None
    # Empty: a SQLite file in data_dir. Otherwise any SQLAlchemy URL (postgresql+psycopg://...).
    database_url: str = ""
    host: str = "127.0.0.1"
    port: int = Field(default=8000, ge=1, le=65535)
    # Mixed into the seeds of secret correctness trials and timing inputs; keep it private per deployment.
    seed_secret: str = ""
    # auto: the strongest that works here (bwrap, else unshare).
    sandbox: Literal["auto", "bwrap", "unshare", "none"] = "auto"
    # The weakest sandbox level the operator accepts: none < unshare < bwrap. `none` is accepted only
    # together with allow_unsandboxed.
    sandbox_minimum: Literal["none", "unshare", "bwrap"] = "none"
    # The explicit opt-out that lets submissions run with no sandbox at all (KERNELGRADE_SANDBOX=none, or
    # auto where no sandbox works): they can then read what the service's user can read and reach local
    # servers. Without it, serve, worker and eval refuse to run submissions unsandboxed.
    allow_unsandboxed: Flag = False
    dispatch: Literal["local", "celery"] = "local"
    broker_url: str = "redis://127.0.0.1:6379/0"
    # Prepended to every queue name, so deployments (or concurrent test runs) can share one broker.
    queue_prefix: str = ""
    # MAX_JOBS of one build (ninja's parallel compiler processes). A load_inline build has two or three
    # translation units, so more than that gains nothing; the compile-ahead may lower it (build_slots.py).
    compile_jobs: int = Field(default=4, ge=1)
    # Concurrent compile-ahead builds in the embedded worker pool (they overlap the device stage of other jobs).
    # 0: as many as the host holds beside its GPU judges (cores and memory; worker/build_slots.py), and
    # one on a CPU-only pool. A positive value is taken as given.
    compile_workers: int = Field(default=0, ge=0)
    # Physical cores set aside for each GPU judge's timing loop and run child, away from builds (worker/cores.py):
    # -1 picks 4 where the judges then take at most half of the host's cores, else 2, where the host keeps at
    # least 2 for builds beside them; 0 places nothing.
    measure_cores: int = Field(default=-1, ge=-1)
    # Compile load_inline's generated main.cpp against a precompiled torch/extension.h, built by the judge once
    # per compiler, torch version and flag variant under the cache dir (about 0.8 GB each). CPU builds only, so far.
    precompiled_headers: Flag = True
    # Build CUDA sources without their `#include <torch/extension.h>` first, and as given where that fails: about
    # half of nvcc's time (evaluator/child/lean_header.py). Off: every build exactly as the submission asks.
    lean_cuda_header: Flag = True
    # A job is tried at most this many times before it is failed with the reason.
    max_attempts: int = Field(default=3, ge=1)
    # A worker renews its lease on a job every lease_seconds / 3; an expired lease means the worker died.
    lease_seconds: float = Field(default=60.0, gt=0)
    # Open mode: no API key needed. auto: on when bound to loopback.
    open_mode: Switch = "auto"
    admin_key: str = ""
    # Per key; 0: no limit.
    rate_limit_per_minute: int = Field(default=120, ge=0)
    # Submissions per key in 24 hours; 0: no quota.
    quota_per_day: int = Field(default=5000, ge=0)
    max_source_bytes: int = Field(default=512 * 1024, ge=1)
    # A whole request body (a batch carries several sources, JSON-escaped) may be at most this large.
    max_request_bytes: int = Field(default=16 * 1024 * 1024, ge=1)
    # Submissions in one POST /v1/submissions/batch.
    max_batch: int = Field(default=32, ge=1)
    log_level: LogLevel = "info"
    # standard: the full protocol of docs/timing.md. fast: fewer trials and a short timing loop, for tests and
    # demos on small machines; results say which parameters were used.
    timing_profile: Literal["standard", "fast"] = "standard"
    # Also time torch.compile of the reference and report the speedup against it. A measurement costs an
    # inductor compile (up to minutes) plus a timing loop, once per problem version, device class and torch
    # version; auto measures under the standard profile only, so that the fast profile of tests and demos
    # stays fast.
    compiled_baseline: Switch = "auto"
    # A stored measurement is reused this long, then measured again: it drifts with drivers, clocks and
    # host load that the key does not capture, and a failed one is retried at this pace (a week).
    compiled_baseline_max_age_hours: float = Field(default=168.0, ge=0)
    # A judge with nothing to grade computes the expected outputs and oracles of problems not yet submitted to
    # (evaluator/judge/prepare.py), so that their first evaluations do not.
    prepare_problems: Flag = True
    # Time each verdict's reference with a short drift check against its distribution stored by an earlier
    # verdict on this device class, timing it in full only where the check fails or the stored one is an hour
    # old (evaluator/judge/reference_timing.py). Off: timed in full before and after every candidate.
    stored_reference_timing: Flag = True
    # Time the candidate and the reference in turn, a few reps at a time, with both run children on one CPU
    # (evaluator/judge/interleaved.py): auto where most reps of both sides are host-bound (their device time is
    # the host's dispatch), on for every verdict, off never (one phase each, as before).
    interleaved_timing: Switch = "auto"
    # Judges of the embedded pool: -1 = one per visible GPU, or one CPU judge when there is none; N = at most N
    # GPUs; 0 = no embedded pool (API only, workers run elsewhere).
    local_judges: int = Field(default=-1, ge=-1)
    # Judges grading on each GPU at once. With two, one's correctness calls, trial making and comparisons, and
    # its children loading, run while the other's are paused or between its steps; a measurement holds the
    # device alone, so no judge's work ever runs beside another's timed phase (evaluator/host/device_lock.py).
    judges_per_gpu: int = Field(default=1, ge=1, le=4)
    # Each judge grades in a process of its own (worker/grading_process.py) rather than a thread of the server's
    # or worker's process: auto where there are two GPU judges or more, whose Python work (reading replies,
    # making the reference's outputs, comparing) would otherwise take turns at one interpreter; on for every
    # judge; off never.
    judge_processes: Switch = "auto"
    # Run children each GPU judge keeps started and warm (torch imported, device context made) for the next
    # submissions, and whether it keeps references with their expected outputs between evaluations. 0: start
    # each child on demand and keep nothing, as a one-off `kernelgrade eval` does. Several, because a start
    # (3-6 s under a sandbox, its device warm-up held back while the judge times) outlasts two small problems'
    # evaluations, and a timed evaluation takes two children (the candidate's and its reference's): on an H100,
    # back-to-back jobs waited 0.33 s per verdict (mean) for theirs with two and 0.15 s with three, side by
    # side; on an H200, over 14 KernelBench level 2 problems seen before, 6.5 s in all with three and 0.1 s with
    # five (645 and 723 verdicts an hour). Eight, because a stream of small prebuilt problems still waited with
    # five: on an H200, 32 of them one server after the other, 3.6 s in all for a spare and 4.1 s for the
    # reference's child with five, 0.2 s and 1.5 s with eight (1,822 and 1,958 verdicts an hour; in a second run
    # five kept up, at 1.3 s in all). Each spare holds a CUDA context and a torch process's host memory. A CPU
    # judge keeps at most one (its spares start one at a time, beside builds on the same cores).
    warm_children: int = Field(default=8, ge=0)
    # A lock file every judge of the host opens: held around CPU measurements and CPU run children's starts,
    # so that judges in separate processes (workers started side by side) keep out of each other's timing
    # (evaluator/host/host_lock.py). In the temp dir, which all of a host's workers share whatever their
    # data dirs.
    host_lock: ExpandedPath = Field(default_factory=_default_host_lock)
    # An idle judge looks for queued jobs this often when nothing wakes it (jobs queued by another process).
    poll_seconds: float = Field(default=2.0, gt=0)
    # Where `kernelgrade submit` sends submissions; empty: http://{host}:{port}.
    server_url: str = ""
    # The key `kernelgrade submit` sends (X-API-Key); empty in open mode.
    api_key: str = ""
    # dispatch = celery: a job still queued this long after its task was sent is sent again, in case the
    # broker lost the task. Five minutes: more than a job waits behind the one or two ahead of it on an
    # unbacklogged judge (a GPU job compiles and runs in a minute or two), so a healthy service sends nothing
    # twice, and a lost task is found within minutes. Longer waits (a backlog) back off (storage.lease_reaper).
    resend_queued_seconds: float = Field(default=300.0, gt=0)

    @classmethod
    def settings_customise_sources(cls, settings_cls: type[BaseSettings], init_settings: PydanticBaseSettingsSource,
                                   env_settings: PydanticBaseSettingsSource,
                                   dotenv_settings: PydanticBaseSettingsSource,
                                   file_secret_settings: PydanticBaseSettingsSource,
                                   ) -> tuple[PydanticBaseSettingsSource, ...]:
        # Only what the constructor is given: from_env() reads the variables itself, from the mapping it is
        # handed, so that constructing Settings in code (tests, benches) never picks up the caller's shell.
        return (init_settings,)

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, **overrides: Any) -> Self:
        """The KERNELGRADE_* variables of `environ` (default: os.environ), then `overrides` (field names,
        e.g. from command-line options) on top. Raises SettingsError naming every bad value."""
        values = EnvironSource(cls, os.environ if environ is None else environ)()
        try:
            return cls(**{**values, **overrides})
        except ValidationError as exc:
            raise SettingsError("; ".join(_problems(exc, cls.model_fields, set(overrides)))) from None

    def replace(self, **changes: Any) -> Self:
        """A copy with `changes`, validated like the rest."""
        return type(self)(**{**self.model_dump(), **changes})

    @property
    def cache_dir(self) -> Path:
        return self.data_dir / "cache"

    @property
    def work_root(self) -> Path:
        return self.work_dir if self.work_dir is not None else self.data_dir / "work"

    @property
    def resolved_database_url(self) -> str:
        return self.database_url or f"sqlite:///{self.data_dir / 'kernelgrade.db'}"

    @property
    def resolved_server_url(self) -> str:
        return self.server_url.rstrip("/") or f"http://{self.host}:{self.port}"

    @property
    def measures_compiled_baseline(self) -> bool:
        if self.compiled_baseline == "auto":
            return self.timing_profile != "fast"
        return self.compiled_baseline == "on"

    @property
    def is_open(self) -> bool:
        if self.open_mode == "auto":
            return self.host in ("127.0.0.1", "localhost", "::1")
        return self.open_mode == "on"


class EnvironSource(EnvSettingsSource):
    """pydantic-settings' reading of environment variables (prefix, names, empty values), from a given
    mapping instead of os.environ."""

    def __init__(self, settings_cls: type[BaseSettings], environ: Mapping[str, str]) -> None:
        self.environ = environ  # read by the base class's __init__, through _load_env_vars
        super().__init__(settings_cls)

    def _load_env_vars(self) -> Mapping[str, str | None]:
        return parse_env_vars(self.environ, self.case_sensitive, self.env_ignore_empty, self.env_parse_none_str)


def _problems(error: ValidationError, fields: Mapping[str, FieldInfo], overridden: set[str]) -> list[str]:
    """One line per bad field: the variable (or the overriding name), its value, and what is accepted."""
    problems: dict[str, str] = {}
    for item in error.errors():
        name = str(item["loc"][0]) if item["loc"] else ""
        field = fields.get(name)
        if field is None:
            problems[name] = f"{name}: not a setting"
            continue
        source = name if name in overridden else PREFIX + name.upper()
        problems.setdefault(name, f"{source}={item['input']!r}: {accepted(field)}")
    return list(problems.values())


def accepted(field: FieldInfo) -> str:
    """What a field accepts, in the words of an error message."""
    kind = field.annotation
    if get_origin(kind) is Literal:
        choices = [str(choice) for choice in get_args(kind)]
        return SWITCH_ACCEPTED if choices == ["auto", "on", "off"] else "use " + _either(choices)
    if kind is bool:
        return FLAG_ACCEPTED
    if kind is Path:
        return "use a path"
    number = "a whole number" if kind is int else "a number"
    low = next((m.ge for m in field.metadata if isinstance(m, annotated_types.Ge)), None)
    high = next((m.le for m in field.metadata if isinstance(m, annotated_types.Le)), None)
    above = next((m.gt for m in field.metadata if isinstance(m, annotated_types.Gt)), None)
    if low is not None and high is not None:
        return f"use {number} from {low} to {high}"
    if low is not None:
        return f"use {number} of at least {low}"
    if above is not None:
        return f"use {number} above {above}"
    return f"use {number}"


def _either(choices: list[str]) -> str:
    return choices[0] if len(choices) == 1 else f"{', '.join(choices[:-1])} or {choices[-1]}"
