"""bench/host_transfers.py on the CPU: a small region given its pages three ways, a tensor file written, read and
removed, each figure printed in seconds and GB/s."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"


def test_each_way_is_measured_and_printed(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
                                          tmp_path: Path) -> None:
    monkeypatch.syspath_prepend(str(BENCH))
    importlib.import_module("host_transfers").main(["--gib", "0.01", "--dir", str(tmp_path), "--threads", "2",
                                                    "--device", "cpu"])
    rows = dict(re.findall(r"^(\S.*?) +([\d.]+) s +[\d.]+ GB/s$", capsys.readouterr().out, re.MULTILINE))
    assert {"region: pages by fallocate", "region: pages by touching, 1 thread",
            "region: pages by touching, 2 threads", f"file in {tmp_path}: written", f"file in {tmp_path}: read",
            f"file in {tmp_path}: written as parts, 4 at once", f"file in {tmp_path}: removed"} <= set(rows), rows
    assert all(float(seconds) >= 0 for seconds in rows.values())
    assert not any(tmp_path.iterdir())  # the file and its dir removed
