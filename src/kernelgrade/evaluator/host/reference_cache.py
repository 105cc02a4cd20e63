"""References, their outputs and float64 oracles, kept between evaluations of one problem.

A trial's expected outputs depend only on (problem version, device, weight seed, trial seed): a judge that
grades many candidates of a problem computes them once. The secret trials draw their seeds from a per-problem
pool that is refreshed: each seed serves at most `secret_uses` evaluations and is then replaced by a new
random one, so the oracle work is shared while a submission that recorded the inputs it was shown can replay
them against only a few later evaluations. Timing inputs stay fresh per evaluation (timing_stage.py).

A reference whose parameters or buffers change when it runs (running statistics, say) is rebuilt for every
evaluation instead, since its outputs could then depend on the calls before.
"""

from __future__ import annotations

import functools
import secrets
import threading
from collections import OrderedDict
from dataclasses import dataclass, field

import torch

from kernelgrade.evaluator.host.environment import device_class, mem_available
from kernelgrade.evaluator.host.reference import Footprint, Reference
from kernelgrade.evaluator.host.trial_store import TrialStore, digest, problem_version
from kernelgrade.evaluator.request import ProblemSpec

# Problems kept at once. A stream cycling through more problems than this keeps none of them (each is
# evicted before it comes round again): an RL batch or a suite run interleaves dozens, and recomputing a
# trial costs a large problem about a second. Memory, not this count, is what usually bounds them.
KEEP_PROBLEMS = 32
# Trials kept per problem: the public trials and the pool of secret seeds (8) of one problem.
KEEP_TRIALS = 16
# The device memory kept expected outputs and oracles of all problems may hold: an eighth of the device
# (10 GiB of an H100) leaves the submissions the rest; a 4096^2 fp32 matmul keeps 192 MiB per trial.
DEVICE_SHARE = 8
# Host memory for the kept inputs (and everything, on a CPU judge): an eighth of what is available when the
# judge starts, so that one judge per GPU of an 8-GPU host takes at most all of it, and at most 16 GiB.
HOST_SHARE = 8
HOST_MAX = 16 * 1024**3


@dataclass
class _SecretPool:
    seeds: list[int] = field(default_factory=list)
    uses: dict[int, int] = field(default_factory=dict)


class References:
    def __init__(self, secret_pool: int = 8, secret_uses: int = 16, budget: Footprint | None = None,
                 store: TrialStore | None = None) -> None:
        """`budget`: the memory the kept references of all problems may hold, their weights and kept trials
        (default: device_budget() per device and host_budget()); the least recently used problems are let go
        to make room for a new reference or trial. `store`: where trials and secret pools are kept on disk
        (trial_store.py), found again after a restart."""
        self.secret_pool, self.secret_uses = secret_pool, secret_uses
        self._budget = budget
        self._store = store
        self._budgets: dict[str, Footprint] = {}  # per device, read once: the host's free memory drifts
        self._kept: OrderedDict[tuple[str, str, int], tuple[Reference, list[int]]] = OrderedDict()
        self._stateful: set[tuple[str, str, int]] = set()
        self._pools: dict[tuple[str, str], _SecretPool] = {}
        self._lock = threading.Lock()

    def reference(self, problem: ProblemSpec, device: torch.device, weight_seed: int) -> Reference:
        """The kept reference if its state is as built; else a new one (kept unless it proved stateful)."""
        key = (problem_version(problem), str(device), weight_seed)
        with self._lock:
            kept = self._kept.get(key)
            if kept is not None and kept[0].state() == kept[1]:
                self._kept.move_to_end(key)
                return kept[0]
            if kept is not None:
                del self._kept[key]
                self._stateful.add(key)
        stateful = key in self._stateful
        fresh = Reference(problem, device, weight_seed, KEEP_TRIALS if not stateful else 0,
                          functools.partial(self._make_room, key), functools.partial(self._let_go_all_but, key),
                          self._store if not stateful else None)
        if key not in self._stateful:
            with self._lock:
                while len(self._kept) >= KEEP_PROBLEMS:
                    self._kept.popitem(last=False)
                if self._let_go_for(key, fresh.models()):  # its weights count too
                    self._kept[key] = (fresh, fresh.state())
        return fresh

    def _make_room(self, key: tuple[str, str, int], size: Footprint) -> bool:
        """Whether the reference under `key` may keep a trial of `size`, letting other problems go, least
        recently used first, until it fits."""
        with self._lock:
            # A reference that is not kept (let go meanwhile, or too large) gains nothing from keeping trials.
            return key in self._kept and self._let_go_for(key, size)

    def _let_go_for(self, key: tuple[str, str, int], size: Footprint) -> bool:
        """Under the lock: whether `size` more fits, once problems other than `key` are let go as needed."""
        budget = self._budget or self._budgets.setdefault(
            key[1], Footprint(device_budget(torch.device(key[1])), host_budget()))
        if not _fits(Footprint(), size, budget):
            return False  # would not fit were nothing else kept: let nothing go for it
        while not _fits(self._held(), size, budget):
            other = next((k for k in self._kept if k != key), None)
            if other is None:
                return False
            del self._kept[other]
        return True

    def _let_go_all_but(self, key: tuple[str, str, int]) -> None:
        """Every problem kept but the one under `key`: its reference ran the device out of memory."""
        with self._lock:
            for other in [k for k in self._kept if k != key]:
                del self._kept[other]

    def let_go_on(self, device: torch.device) -> None:
        """Every problem kept on `device`: an evaluation there ran it out of memory, and its retry starts with
        all of the device the judge can give."""
        with self._lock:
            for key in [k for k in self._kept if k[1] == str(device)]:
                del self._kept[key]

    def _held(self) -> Footprint:
        return sum((reference.kept + reference.models() for reference, _ in self._kept.values()), Footprint())

    def secret_seeds(self, problem: ProblemSpec, device: torch.device, count: int) -> list[int]:
        """`count` distinct seeds from the problem's pool, each counted as used; worn-out seeds are replaced
        by fresh random ones."""
        with self._lock:
            pool = self._refreshed(problem, device, count)
            chosen = secrets.SystemRandom().sample(pool.seeds, count)
            for seed in chosen:
                pool.uses[seed] += 1
            self._save_pool(problem, device, pool)
            return chosen

    def pool_seeds(self, problem: ProblemSpec, device: torch.device) -> list[int]:
        """Every seed of the problem's pool as the next evaluations will draw from it, none counted as used: what
        preparing the problem ahead computes (judge/prepare.py)."""
        with self._lock:
            pool = self._refreshed(problem, device, self.secret_pool)
            self._save_pool(problem, device, pool)
            return list(pool.seeds)

    @property
    def store(self) -> TrialStore | None:
        return self._store

    def _refreshed(self, problem: ProblemSpec, device: torch.device, count: int) -> _SecretPool:
        """Under the lock: the problem's pool with worn-out seeds replaced by fresh random ones, at least `count`."""
        pool = self._pool(problem, device)
        for seed in [s for s in pool.seeds if pool.uses[s] >= self.secret_uses]:
            pool.seeds.remove(seed)
            del pool.uses[seed]
        while len(pool.seeds) < max(self.secret_pool, count):
            seed = secrets.randbits(60)
            pool.seeds.append(seed)
            pool.uses[seed] = 0
        return pool

    def _save_pool(self, problem: ProblemSpec, device: torch.device, pool: _SecretPool) -> None:
        if self._store is not None:
            self._store.save_pool(_pool_name(problem, device), pool.uses)

    def _pool(self, problem: ProblemSpec, device: torch.device) -> _SecretPool:
        """Under the lock: the problem's pool on this device, as the store kept it where this judge has none."""
        key = (problem_version(problem), str(device))
        if key not in self._pools:
            uses = self._store.pool(_pool_name(problem, device)) if self._store is not None else {}
            self._pools[key] = _SecretPool(list(uses), uses)
        return self._pools[key]


def _fits(held: Footprint, size: Footprint, budget: Footprint) -> bool:
    """Only the memory the new trial adds to is checked: a GPU judge's CPU problem has no device budget of its
    own, and must not let the GPU problems go."""
    device_ok = size.device == 0 or held.device + size.device <= budget.device
    return device_ok and (size.host == 0 or held.host + size.host <= budget.host)


def device_budget(device: torch.device) -> int:
    if device.type != "cuda":
        return 0  # a CPU judge's trials are all in host memory
    return int(torch.cuda.get_device_properties(device).total_memory) // DEVICE_SHARE


def host_budget() -> int:
    available = mem_available()
    return HOST_MAX if available is None else min(HOST_MAX, available // HOST_SHARE)


def _pool_name(problem: ProblemSpec, device: torch.device) -> str:
    """A pool's key on disk: the judges of one device class share it, as they share the stored trials."""
    return digest(problem_version(problem), device_class(device))


