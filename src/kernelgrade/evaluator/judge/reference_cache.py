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

import secrets
import threading
from collections import OrderedDict
from dataclasses import dataclass, field

import torch

from kernelgrade.evaluator.integrity.tensor_checks import fingerprints
from kernelgrade.evaluator.judge.reference import Reference
from kernelgrade.evaluator.request import ProblemSpec

# Problems kept at once: a judge usually grades a stream of one or a few problems.
KEEP_PROBLEMS = 4
# Trials kept per problem, and the device memory their outputs and oracles may hold in all: a 4096^2 fp32
# matmul keeps 192 MiB per trial, so the seven trials of one evaluation fit with room to spare.
KEEP_TRIALS = 16
KEEP_BYTES = 4 * 1024**3


@dataclass
class _SecretPool:
    seeds: list[int] = field(default_factory=list)
    uses: dict[int, int] = field(default_factory=dict)


class References:
    def __init__(self, secret_pool: int = 8, secret_uses: int = 16) -> None:
        self.secret_pool, self.secret_uses = secret_pool, secret_uses
        self._kept: OrderedDict[tuple[str, str, int], tuple[Reference, list[int]]] = OrderedDict()
        self._stateful: set[tuple[str, str, int]] = set()
        self._pools: dict[tuple[str, str], _SecretPool] = {}
        self._lock = threading.Lock()

    def reference(self, problem: ProblemSpec, device: torch.device, weight_seed: int) -> Reference:
        """The kept reference if its state is as built; else a new one (kept unless it proved stateful)."""
        key = (_version(problem), str(device), weight_seed)
        with self._lock:
            kept = self._kept.get(key)
            if kept is not None and _state(kept[0]) == kept[1]:
                self._kept.move_to_end(key)
                return kept[0]
            if kept is not None:
                del self._kept[key]
                self._stateful.add(key)
        fresh = Reference(problem, device, weight_seed, KEEP_TRIALS if key not in self._stateful else 0, KEEP_BYTES)
        if key not in self._stateful:
            with self._lock:
                self._kept[key] = (fresh, _state(fresh))
                while len(self._kept) > KEEP_PROBLEMS:
                    self._kept.popitem(last=False)
        return fresh

    def secret_seeds(self, problem: ProblemSpec, device: torch.device, count: int) -> list[int]:
        """`count` distinct seeds from the problem's pool, each counted as used; worn-out seeds are replaced
        by fresh random ones."""
        with self._lock:
            pool = self._pools.setdefault((_version(problem), str(device)), _SecretPool())
            for seed in [s for s in pool.seeds if pool.uses[s] >= self.secret_uses]:
                pool.seeds.remove(seed)
                del pool.uses[seed]
            while len(pool.seeds) < max(self.secret_pool, count):
                seed = secrets.randbits(60)
                pool.seeds.append(seed)
                pool.uses[seed] = 0
            chosen = secrets.SystemRandom().sample(pool.seeds, count)
            for seed in chosen:
                pool.uses[seed] += 1
            return chosen


def _version(problem: ProblemSpec) -> str:
    return problem.content_hash or str(hash(problem.source))


def _state(reference: Reference) -> list[int]:
    model = reference.model
    return fingerprints([*model.parameters(), *model.buffers()])
