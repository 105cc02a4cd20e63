"""bench/problem_stages.py on the CPU: a problem prepared, then evaluated twice by one warm judge, each
evaluation's device seconds and parts printed; the second finds the trials the preparation stored or the first
evaluation kept."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"
FIXTURES = Path(__file__).resolve().parent / "kernelbench"


def test_a_problem_evaluated_twice_prints_where_its_device_time_went(monkeypatch: pytest.MonkeyPatch,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.syspath_prepend(str(BENCH))
    # Timed as a test's server times (the fast profile): the standard loop of a microsecond CPU problem runs to its
    # rep cap, each rep behind a 256 MiB cache flush: 232 s on a 2-core machine under the suite's load.
    monkeypatch.setenv("KERNELGRADE_TIMING_PROFILE", "fast")
    importlib.import_module("problem_stages").main([str(FIXTURES), "--levels", "1", "--only", "1_tiny_relu",
                                                    "--times", "2", "--device", "cpu", "--sample"])
    out = capsys.readouterr().out
    assert re.search(r"^== 1_tiny_relu: prepared in [\d.]+ s$", out, re.MULTILINE), out
    evaluations = re.findall(r"^-- (\d): (\w+), device ([\d.]+) s, trials ([^,\n]*(?:, \d+ \w+)*)"
                             r", speedup ([\d.]+)x \(([\d.]+)-([\d.]+)\)(.*)\n   (.*)$", out, re.MULTILINE)
    assert [(index, verdict) for index, verdict, *_ in evaluations] == [("0", "correct"), ("1", "correct")], out
    for _index, _verdict, device, trials, speedup, low, high, _findings, parts in evaluations:
        assert float(device) > 0 and float(low) <= float(speedup) <= float(high), out
        assert "correctness:call" in parts and "timing:candidate" in parts, out
        assert "computed" not in trials, out  # prepared: every trial stored, or kept since
    # The candidate's child's region as the judge held it: on the CPU, host memory no copy registers.
    assert re.findall(r"^   shared region: (.*)$", out, re.MULTILINE) == ["1 MiB, host memory"] * 2, out
    # --sample: where the judge's threads spent the problem's time, the evaluations' pipeline among it
    assert "-- where the judge's threads spent 1_tiny_relu's time" in out, out
    evaluate = r"^ +[\d.]+  MainThread +kernelgrade/evaluator/judge/pipeline.py:evaluate$"
    assert re.search(evaluate, out, re.MULTILINE), out
