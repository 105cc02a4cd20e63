"""bench/compare_cost.py times the comparison of an honest output: on the CPU, a check that it runs and that
the output it builds passes, as the path it means to time is a passing comparison's."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"


def test_it_times_passing_comparisons(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.syspath_prepend(str(BENCH))
    importlib.import_module("compare_cost").main(["--elements", "100000", "--reps", "3", "--device", "cpu"])
    out = capsys.readouterr().out
    assert re.search(r"100,000 fp32 elements on cpu: median [\d.]+ ms .* over 3; peak 0 MiB; passed 3 of 3", out), out
