"""The form of a timed-output file the judge accepts from the run child: [set, scale step, rep, *outputs], the
outputs at the top level so that the judge's load moves them to the device as a checked call's outputs are."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from kernelgrade.evaluator import timing
from kernelgrade.evaluator.judge.outcome import Verdicted
from kernelgrade.evaluator.judge.timed_outputs import _load_timed, _timed_entry
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
