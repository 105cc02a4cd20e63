"""What a long-lived judge keeps between evaluations: run children started ahead of their submissions and
the references with their expected outputs. A one-off evaluate() gets a bundle that keeps nothing."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from kernelgrade.evaluator.host.device_lock import DeviceLock
from kernelgrade.evaluator.host.host_lock import HostLock
from kernelgrade.evaluator.host.reference_cache import References
from kernelgrade.evaluator.host.run_children import RunChildren
from kernelgrade.evaluator.host.trial_store import TrialStore
from kernelgrade.evaluator.sandbox.launcher import Launcher

# References' run children kept loaded between evaluations (judge/reference_child.py): a stream that interleaves
# candidates of a few problems, as an RL batch does, finds each problem's still loaded. Each idles with its
# interpreter and, on a GPU, its CUDA context (a few hundred MiB) and at most reference_child.KEEP_BYTES of sets
# and outputs: under 3 GiB of an 80 GiB device for four.
KEPT_REFERENCE_CHILDREN = 4


@dataclass
class Warm:
    children: RunChildren
    references: References | None = None  # None: every evaluation computes its own

    @classmethod
    def keeping(cls, launcher: Launcher, work_root: Path, cache_dir: Path, spares: int = 1,
                host_lock: Path | None = None, spare_cpus: tuple[int, ...] = (), device_lock: Path | None = None
                ) -> Warm:
        """`spares` children per kind waiting at all times, started on `spare_cpus` (run_children.py), and, where
        there are any, references' children kept loaded between evaluations;
        references and their outputs kept, in memory and under `cache_dir`/prepared (trial_store.py). `host_lock`:
        the file of the lock the host's judges share around CPU measurements (host_lock.py); `device_lock`: that of
        the lock of the judge's GPU (device_lock.py)."""
        lock = HostLock(host_lock) if host_lock is not None else None
        device = DeviceLock(device_lock) if device_lock is not None else None
        return cls(RunChildren(launcher, work_root, spares, hidden=(cache_dir,), host_lock=lock,
                               spare_cpus=spare_cpus, kept=KEPT_REFERENCE_CHILDREN if spares else 0,
                               device_lock=device),
                   References(store=TrialStore(cache_dir / "prepared")))

    @classmethod
    def nothing(cls, launcher: Launcher, work_root: Path, cache_dir: Path) -> Warm:
        return cls(RunChildren(launcher, work_root, 0, hidden=(cache_dir,)))

    def close(self) -> None:
        self.children.close()
