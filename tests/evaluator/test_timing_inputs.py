"""The timing input sets are made in the background; an evaluation that ends before timing stops them."""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path
from types import SimpleNamespace

import torch

from kernelgrade.evaluator import ProblemSpec
from kernelgrade.evaluator.host.reference import Reference, save_timing_sets
from kernelgrade.evaluator.judge.timing_stage import TimingInputs
from kernelgrade.evaluator.request import DeviceKind

SET_S = 0.4  # each set's get_inputs() takes this long
SETS = 5

SLOW_INPUTS = ProblemSpec("slow_inputs", f"""
import time
import torch
class Model(torch.nn.Module):
    def forward(self, x):
        return x + 1
def get_inputs():
    time.sleep({SET_S})
    return [torch.ones(64)]
def get_init_inputs():
    return []
""", device=DeviceKind.CPU, content_hash="slow-inputs-v1")


def _inputs(tmp_path: Path) -> TimingInputs:
    job = SimpleNamespace(work_dir=tmp_path, device=torch.device("cpu"), timing_params=SimpleNamespace(input_sets=SETS),
                          request=SimpleNamespace(trials=SimpleNamespace(seed=7)), secret="s")
    return TimingInputs(job, Reference(SLOW_INPUTS, torch.device("cpu"), 7))  # type: ignore[arg-type]


def test_all_sets_are_made_and_written_for_the_timing_stage(tmp_path: Path) -> None:
    inputs = _inputs(tmp_path)
    sets, paths = inputs.result()
    inputs.close()
    assert len(sets) == SETS and [p.name for p in paths] == [f"timing_{k}.kgt" for k in range(SETS)]
    assert all(p.exists() for p in paths)


def test_closing_before_the_timing_stage_begins_no_further_set(tmp_path: Path) -> None:
    inputs = _inputs(tmp_path)
    time.sleep(SET_S / 2)  # the first set is under way
    started = time.monotonic()
    inputs.close()
    waited = time.monotonic() - started
    assert waited < 2 * SET_S, f"close() waited {waited:.2f} s, as if for every set"
    assert len(list(tmp_path.glob("timing_*.kgt"))) < SETS


def test_no_more_sets_are_written_than_the_first_ones_size_allows(tmp_path: Path) -> None:
    """A problem whose sets two run children cannot hold on the device gets fewer written (timing_room.py)."""
    sizes: list[int] = []

    def most(set_bytes: int) -> int:
        sizes.append(set_bytes)
        return 2

    quick = dataclasses.replace(SLOW_INPUTS, source=SLOW_INPUTS.source.replace(f"time.sleep({SET_S})", "pass"),
                                content_hash="quick-inputs-v1")
    reference = Reference(quick, torch.device("cpu"), 7)
    sets, paths = save_timing_sets(reference, tmp_path, SETS, 7, "s", most=most)
    assert len(sets) == 2 and [p.name for p in paths] == ["timing_0.kgt", "timing_1.kgt"]
    assert sizes == [paths[0].stat().st_size] and not (tmp_path / "timing_2.kgt").exists()
