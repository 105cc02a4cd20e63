"""Trials' expected outputs and oracles, each problem's pool of secret seeds, and its reference's timing
distribution, kept on disk in the judge's cache dir: a judge that restarts, or another judge of the host, finds
a problem prepared instead of running its reference and float64 oracle again, or timing it in full.

A trial is found by (problem version, device class, torch version, weight seed, trial seed), and used only
where the inputs drawn again have the fingerprints it was computed from. The cache dir is hidden from every
child, so the secret seeds and expected outputs stay the judge's. Anything unreadable is computed again.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from kernelgrade.evaluator.request import ProblemSpec
from kernelgrade.evaluator.wire import tensorfile

log = logging.getLogger(__name__)

# The largest trial kept on disk (expected outputs and oracles). A problem keeps up to 16 trials, so at most
# 1 GiB a problem; a trial of this size is recomputed in well under a second on a GPU, while larger ones
# (gigabyte outputs) would cost more disk than they save time.
STORE_MAX_BYTES = 64 * 1024**2
# All stored trials of the host's judges together: past this the least recently used are removed. Idle judges
# prepare the whole catalogue, and a few hundred problems of up to 16 trials each would otherwise fill a disk;
# 16 GiB holds the trials of hundreds of typical problems (a few MB each) and of 16 problems at the size limit.
STORE_TOTAL_BYTES = 16 * 1024**3


@dataclass(frozen=True)
class StoredTrial:
    refs: list[torch.Tensor]
    oracles: list[torch.Tensor] | None
    fingerprints: tuple[int, ...]  # of the inputs the outputs were computed from
    forward_s: float  # the reference's warm call then: what the settle wait scales


@dataclass(frozen=True)
class StoredTiming:
    """The reference's timing distribution as a full measurement beside a candidate left it
    (judge/reference_timing.py)."""

    device_ms: tuple[float, ...]
    wall_ms: tuple[float, ...]
    stop_reason: str
    host_bound_reps: int
    measured_at: float  # seconds since the epoch

    def age_s(self) -> float:
        return time.time() - self.measured_at


class TrialStore:
    def __init__(self, root: Path) -> None:
        self.root = root

    def load(self, key: str, device: torch.device) -> StoredTrial | None:
        """The trial under `key`, its outputs on `device` (oracles where they were: on `device` or the host)."""
        path = self._trial_path(key)
        try:
            now = time.time_ns()  # the precise time: the kernel's own stamp is coarse enough to tie with a write's
            os.utime(path, ns=(now, now))  # used now: the last to be removed (_trim)
            refs, oracles, on_device, prints, forward_s = tensorfile.load(path)
        except FileNotFoundError:
            return None
        except Exception as error:  # a damaged file of any kind is only work to do again, never a failed grading
            log.warning("stored trial %s is unreadable (%s); computing it again", path.name, error)
            return None
        oracle_device = device if on_device else torch.device("cpu")
        return StoredTrial([r.to(device) for r in refs],
                           None if oracles is None else [o.to(oracle_device) for o in oracles],
                           tuple(int(p) for p in prints), float(forward_s))

    def save(self, key: str, trial: StoredTrial) -> None:
        """Keeps `trial` unless it is over STORE_MAX_BYTES; written aside and renamed, so no reader sees half."""
        if not storable([*trial.refs, *(trial.oracles or [])]):
            return
        on_device = trial.oracles is not None and any(o.device.type != "cpu" for o in trial.oracles)
        values: list[Any] = [trial.refs, trial.oracles, on_device, list(trial.fingerprints), trial.forward_s]
        self._write(self._trial_path(key), lambda path: tensorfile.save(path, values))
        self._trim()

    def _trim(self) -> None:
        """Remove the least recently used trials until all of them take at most STORE_TOTAL_BYTES."""
        try:
            stats = [(f.stat(), f) for f in (self.root / "trials").glob("*.kgt")]
        except OSError:  # another judge removed one meanwhile: the next save trims
            return
        files = sorted((stat.st_mtime, stat.st_size, f) for stat, f in stats)
        total = sum(size for _, size, _ in files)
        for _, size, path in files:
            if total <= STORE_TOTAL_BYTES:
                break
            path.unlink(missing_ok=True)
            total -= size

    def pool(self, key: str) -> dict[int, int]:
        """A problem's secret seeds and how often each was used; empty where none was kept."""
        try:
            return {int(seed): int(uses) for seed, uses in json.loads(self._pool_path(key).read_text()).items()}
        except (OSError, ValueError, AttributeError):
            return {}

    def save_pool(self, key: str, uses: dict[int, int]) -> None:
        text = json.dumps({str(seed): count for seed, count in uses.items()})
        self._write(self._pool_path(key), lambda path: path.write_text(text))

    def timing(self, key: str) -> StoredTiming | None:
        """The reference timing under `key`; None where there is none or it does not read as one."""
        try:
            data = json.loads(self._timing_path(key).read_text())
            return StoredTiming(tuple(float(v) for v in data["device_ms"]), tuple(float(v) for v in data["wall_ms"]),
                                str(data["stop_reason"]), int(data["host_bound_reps"]), float(data["measured_at"]))
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def save_timing(self, key: str, timing: StoredTiming) -> None:
        text = json.dumps(dataclasses.asdict(timing))
        self._write(self._timing_path(key), lambda path: path.write_text(text))

    def prepared(self, key: str) -> bool:
        """Whether a problem's preparation under `key` was finished (judge/prepare.py)."""
        return self._prepared_path(key).exists()

    def mark_prepared(self, key: str, summary: str) -> None:
        self._write(self._prepared_path(key), lambda path: path.write_text(summary))

    def _prepared_path(self, key: str) -> Path:
        return self.root / "prepared" / f"{key}.txt"

    def _trial_path(self, key: str) -> Path:
        return self.root / "trials" / f"{key}.kgt"

    def _timing_path(self, key: str) -> Path:
        return self.root / "timings" / f"{key}.json"

    def _pool_path(self, key: str) -> Path:
        return self.root / "pools" / f"{key}.json"

    def _write(self, path: Path, write: Any) -> None:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            aside = path.with_name(f".{path.name}.{os.getpid()}")
            write(aside)
            aside.replace(path)
        except OSError as error:
            log.warning("could not keep %s on disk: %s", path.name, error)


def storable(tensors: list[torch.Tensor]) -> bool:
    """Whether a trial's expected outputs and oracles are small enough to keep (STORE_MAX_BYTES)."""
    return sum(t.numel() * t.element_size() for t in tensors) <= STORE_MAX_BYTES


def digest(*parts: object) -> str:
    return hashlib.sha256("|".join(str(p) for p in parts).encode()).hexdigest()[:40]


def problem_version(problem: ProblemSpec) -> str:
    """A name for the problem's version that is the same in every process: its content hash, else its source's."""
    return problem.content_hash or hashlib.sha256(problem.source.encode()).hexdigest()
