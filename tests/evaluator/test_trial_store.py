"""Trials' expected outputs and secret pools kept on disk: a judge that restarts finds a problem prepared."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from kernelgrade.evaluator.host import trial_store
from kernelgrade.evaluator.host.environment import device_class
from kernelgrade.evaluator.host.reference_cache import References
from kernelgrade.evaluator.host.trial_store import TrialStore
from tests.evaluator.test_warm import ADD, BATCH_NORM

CPU = torch.device("cpu")
SEED = 1234


def restarted(root: Path) -> References:
    """A judge's references as a fresh process has them: nothing in memory, the store on disk."""
    return References(store=TrialStore(root))


def test_a_trial_computed_before_a_restart_is_read_back_equal(tmp_path: Path) -> None:
    first = restarted(tmp_path).reference(ADD, CPU, 0)
    computed = first.trial(SEED)
    assert computed.prepared == "computed"
    kept = first.trial(SEED)
    assert kept.prepared == "kept" and kept.made_s == ()  # nothing made: the result says so
    again = restarted(tmp_path).reference(ADD, CPU, 0)
    stored = again.trial(SEED)
    assert stored.prepared == "stored"
    for made in (computed, stored):
        assert [part for part, _seconds in made.made_s] == ["inputs", "expected"]
        assert all(seconds >= 0 for _part, seconds in made.made_s)
    assert stored.fingerprints == computed.fingerprints
    assert all(torch.equal(a, b) for a, b in zip(stored.expected.refs, computed.expected.refs, strict=True))
    assert stored.expected.oracles is not None and computed.expected.oracles is not None
    assert all(torch.equal(a, b) for a, b in zip(stored.expected.oracles, computed.expected.oracles, strict=True))
    assert again.forward_s == first.forward_s < float("inf")  # the settle wait scales with it as before
    assert again.trial(SEED + 1).prepared == "computed"  # another seed is another trial


def test_a_reference_that_changes_when_it_runs_stores_nothing(tmp_path: Path) -> None:
    restarted(tmp_path).reference(BATCH_NORM, CPU, 0).trial(SEED)
    assert restarted(tmp_path).reference(BATCH_NORM, CPU, 0).trial(SEED).prepared == "computed"


def test_a_trial_over_the_size_limit_is_not_kept_on_disk(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(trial_store, "STORE_MAX_BYTES", 16)
    restarted(tmp_path).reference(ADD, CPU, 0).trial(SEED)
    assert restarted(tmp_path).reference(ADD, CPU, 0).trial(SEED).prepared == "computed"


def test_an_unreadable_or_foreign_trial_is_computed_again(tmp_path: Path) -> None:
    restarted(tmp_path).reference(ADD, CPU, 0).trial(SEED)
    [path] = (tmp_path / "trials").iterdir()
    path.write_bytes(b"\x05\x00\x00\x00\x00\x00\x00\x00{oops")
    assert restarted(tmp_path).reference(ADD, CPU, 0).trial(SEED).prepared == "computed"
    # Another weight seed is another reference: none of its trials is the first one's.
    assert restarted(tmp_path).reference(ADD, CPU, 1).trial(SEED).prepared == "computed"


def test_the_secret_pool_survives_a_restart_with_its_uses(tmp_path: Path) -> None:
    references = restarted(tmp_path)
    references.secret_pool = 3
    chosen = references.secret_seeds(ADD, CPU, 3)
    after = restarted(tmp_path)
    after.secret_pool = 3
    assert sorted(after.secret_seeds(ADD, CPU, 3)) == sorted(chosen)
    assert TrialStore(tmp_path).pool(trial_store.digest("add-v1", device_class(CPU))) == dict.fromkeys(chosen, 2)


def test_past_the_total_limit_the_least_recently_used_trials_are_removed(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    reference = restarted(tmp_path).reference(ADD, CPU, 0)
    reference.trial(SEED)
    [first] = (tmp_path / "trials").iterdir()
    monkeypatch.setattr(trial_store, "STORE_TOTAL_BYTES", first.stat().st_size * 5 // 2)  # two, give or take
    reference.trial(SEED + 1)
    assert restarted(tmp_path).reference(ADD, CPU, 0).trial(SEED).prepared == "stored"  # used: now the newest
    reference.trial(SEED + 2)  # a third trial: the least recently used one goes
    again = restarted(tmp_path).reference(ADD, CPU, 0)
    assert [again.trial(s).prepared for s in (SEED, SEED + 2, SEED + 1)] == ["stored", "stored", "computed"]
