"""bench/device_sharing.py on a GPU: a child started by the judge's launcher imports two device allocations of its
judge from their descriptors, writes softmax of one into the other, and does the same through a host region; the
judge finds both outputs equal to its own softmax."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"


@pytest.mark.gpu
def test_a_sandboxed_child_writes_its_outputs_into_the_judges_device_memory(monkeypatch: pytest.MonkeyPatch,
                                                                            tmp_path: Path) -> None:
    monkeypatch.syspath_prepend(str(BENCH))
    judge, child, notes = importlib.import_module("device_sharing").judge_trial("auto", 0.05, tmp_path)
    assert "error" not in child, child
    assert notes[:2] == ["device: True", "host: True"], notes
    assert {"device: import and map", "host: inputs to the device"} <= set(child["seconds"])
    assert {"device: create two", "host: inputs placed"} <= set(judge)
