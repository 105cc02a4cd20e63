"""The form of a timed-output file the judge accepts from the run child: [set, scale step, rep, *outputs], the
outputs at the top level so that the judge's load moves them to the device as a checked call's outputs are."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch

from kernelgrade.evaluator import timing
from kernelgrade.evaluator.host.reference import to_device
from kernelgrade.evaluator.judge import timed_outputs
from kernelgrade.evaluator.judge.outcome import Verdicted
from kernelgrade.evaluator.judge.timed_outputs import PlacedSets, _load_timed, _timed_entry
from kernelgrade.evaluator.wire import tensorfile


def test_a_timed_file_gives_its_set_step_rep_and_outputs_and_is_removed(tmp_path: Path) -> None:
    path, out = tmp_path / "timed_0.kgt", torch.arange(6.0).reshape(2, 3)
    tensorfile.save(path, [2, timing.SCALE_STEPS, 17, out, None])
    set_index, step, rep, outs = _timed_entry(_load_timed(path, torch.device("cpu"), 6 * 4), sets=3)
    assert (set_index, step, rep) == (2, timing.SCALE_STEPS, 17) and outs[1] is None
    assert torch.equal(outs[0], out) and not path.exists()


@pytest.mark.parametrize("entry", [
    [3, 0, 1, torch.zeros(1)],  # no such input set
    [0, timing.SCALE_STEPS + 1, 1, torch.zeros(1)],  # no such scale step
    [0, 0],  # no rep
    [0, 0, "1", torch.zeros(1)],  # a rep that is not a number
    {"set": 0},
])
def test_anything_else_is_a_wrong_timed_output(entry: object) -> None:
    with pytest.raises(Verdicted):
        _timed_entry(entry, sets=3)


def test_a_missing_file_is_a_wrong_timed_output(tmp_path: Path) -> None:
    with pytest.raises(Verdicted):
        _load_timed(tmp_path / "timed_9.kgt", torch.device("cpu"), 4)


def test_a_file_larger_than_one_call_s_outputs_is_a_wrong_timed_output(tmp_path: Path) -> None:
    path = tmp_path / "timed_0.kgt"
    tensorfile.save(path, [0, 0, 1, torch.zeros(1024)])
    # Outputs whose bytes with the largest header allowed come to one byte less than the file.
    output_bytes = tensorfile.size(path) - 1 - 8 - tensorfile.MAX_HEADER_BYTES
    with pytest.raises(Verdicted):
        _load_timed(path, torch.device("cpu"), output_bytes)
    assert _load_timed(path, torch.device("cpu"), output_bytes + 1)[2] == 1


def test_the_recheck_holds_one_set_placed_and_scales_its_inputs_as_the_child_does(
        monkeypatch: pytest.MonkeyPatch) -> None:
    sets = [[torch.rand(8), torch.ones(3)], [torch.rand(8) + 1, torch.arange(3.0)]]
    placements: list[int] = []
    looked_at: list[int] = []
    whole_number_check = timing.scalable

    def placed(values: list[Any], device: torch.device) -> list[Any]:
        placements.append(next(i for i, s in enumerate(sets) if s is values))
        return to_device(values, device)

    def scalable(value: Any) -> bool:
        looked_at.append(id(value))
        return whole_number_check(value)

    monkeypatch.setattr(timed_outputs, "to_device", placed)
    monkeypatch.setattr(timing, "scalable", scalable)
    rechecked = PlacedSets(sets, torch.device("cpu"))
    for set_index, step in [(0, 0), (0, 2), (1, 3), (0, 1)]:
        which = [isinstance(v, torch.Tensor) and not torch.equal(v, torch.trunc(v)) for v in sets[set_index]]
        child = timing.scaled_inputs(sets[set_index], step, which)  # what the child's rep ran on
        assert all(torch.equal(a, b) for a, b in zip(rechecked.rep_inputs(set_index, step), child, strict=True))
    assert placements == [0, 1, 0]  # the set last used only, placed again when it comes back
    assert len(looked_at) == 4  # each set's inputs looked at once
