"""bench/judge_memory.py replays a judge's own work over a mixed stream with one warm reference cache: on the
CPU its memory figures are all 0, but the replay itself runs, and a problem seen again finds its public trials
kept, as a judge's next evaluation of it would."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"
FIXTURES = Path(__file__).resolve().parent / "kernelbench"


def test_a_problem_seen_again_finds_its_public_trials_kept(monkeypatch: pytest.MonkeyPatch,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.syspath_prepend(str(BENCH))
    importlib.import_module("judge_memory").main([str(FIXTURES), "--levels", "1,2", "--problems", "3", "--again",
                                                  "2", "--device", "cpu"])
    out = capsys.readouterr().out
    rows = re.findall(r"^\s+(\d+) (\S+)\s.*  ((?:\d+ \w+(?:, )?)+)$", out, re.MULTILINE)
    assert [int(index) for index, _name, _how in rows] == [0, 1, 2, 3, 4], out
    assert [how for _index, _name, how in rows[:3]] == ["7 computed"] * 3, out
    for again, first in ((3, 0), (4, 1)):  # the stream's first problems, again
        assert rows[again][1] == rows[first][1], out
        # The five public trials kept; the two secret ones drawn from the problem's pool of random seeds, which
        # may or may not have been drawn (and kept) before.
        counts = {how: int(count) for count, how in re.findall(r"(\d+) (\w+)", rows[again][2])}
        assert counts.get("kept", 0) >= 5 and sum(counts.values()) == 7, out
