"""bench/host_memory.py: the host's memory beside a graded pass, read from the kernel's own files."""

from __future__ import annotations

import importlib
import time
from pathlib import Path
from types import ModuleType

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"
GIB_KB = 1024 * 1024


def _module(monkeypatch: pytest.MonkeyPatch, name: str = "host_memory") -> ModuleType:
    monkeypatch.syspath_prepend(str(BENCH))
    return importlib.import_module(name)


def _write(meminfo: Path, pressure: Path, available_gib: int, dirty_gib: int, some_us: int) -> None:
    """Both files replaced whole, as the kernel's are read: a sampler never sees one half written."""
    _replace(meminfo, f"MemTotal:       {128 * GIB_KB} kB\nMemAvailable:   {available_gib * GIB_KB} kB\n"
                      f"Dirty:          {dirty_gib * GIB_KB} kB\nWriteback:      {GIB_KB // 2} kB\n"
                      "HugePages_Total:       0\n")
    _replace(pressure, f"some avg10=1.00 avg60=0.50 avg300=0.10 total={some_us}\n"
                       f"full avg10=0.00 avg60=0.00 avg300=0.00 total={some_us // 2}\n")


def _replace(path: Path, text: str) -> None:
    written = path.with_suffix(".new")
    written.write_text(text)
    written.replace(path)


def test_a_reading_is_in_bytes_and_microseconds_and_has_no_stalls_without_psi(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    memory = _module(monkeypatch)
    meminfo, pressure = tmp_path / "meminfo", tmp_path / "pressure"
    _write(meminfo, pressure, 10, 3, 1500)
    assert memory.read(meminfo, pressure) == memory.Reading(10 << 30, 3 << 30, 1 << 29, 1500, 750)
    assert memory.read(meminfo, tmp_path / "absent") == memory.Reading(10 << 30, 3 << 30, 1 << 29, None, None)


def test_a_sampler_keeps_the_least_available_the_most_dirty_and_the_stall_between_its_ends(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    memory = _module(monkeypatch)
    meminfo, pressure = tmp_path / "meminfo", tmp_path / "pressure"
    _write(meminfo, pressure, 10, 1, 1_000_000)
    with memory.Sampler(0.005, meminfo, pressure) as sampler:
        _write(meminfo, pressure, 4, 3, 2_000_000)
        seen = len(sampler.readings)
        deadline = time.monotonic() + 30
        while len(sampler.readings) <= seen + 1 and time.monotonic() < deadline:
            time.sleep(0.005)
        _write(meminfo, pressure, 8, 2, 3_500_000)
    summary = sampler.summary()
    assert (summary.least_available_gib, summary.most_dirty_gib, summary.most_writeback_gib) == (4.0, 3.0, 0.5)
    assert summary.stall_some_s == pytest.approx(2.5) and summary.stall_full_s == pytest.approx(1.25)


def test_this_host_s_memory_is_read(monkeypatch: pytest.MonkeyPatch) -> None:
    memory = _module(monkeypatch)
    with memory.Sampler(0.01) as sampler:
        time.sleep(0.05)
    assert len(sampler.readings) >= 2 and sampler.summary().least_available_gib > 0


def test_the_stream_report_prints_its_pass_s_host_memory(monkeypatch: pytest.MonkeyPatch,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    memory = _module(monkeypatch)
    service, report = _module(monkeypatch, "throughput_service"), _module(monkeypatch, "throughput_report")
    corpus = _module(monkeypatch, "throughput_corpus")
    problem = corpus.ProblemRef("94_mseloss", "", builtin=False)
    submission = corpus.Submission(0, "reference:94_mseloss", corpus.Expect.CORRECT, problem, "", "")
    stamp = "2026-12-01T12:00:00+00:00"
    body = {"id": 3, "evaluation": {"verdict": "correct", "created_at": stamp, "started_at": stamp,
                                    "finished_at": "2026-12-01T12:00:20+00:00", "findings": [],
                                    "result": {"stage_seconds": [["load", 1.0]], "wall_s": 20.0}}}
    host = memory.HostMemory(1.7, 24.5, 2.0, 3.25, None)
    run = report.summarize(service.Config("after", {}), [service.graded(submission, body)], 1, None,
                           host_memory=host)
    report.print_runs([run])
    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[-1] for line in lines if line.startswith("host:")] == ["1.7", "24.5", "2.0", "3.2", "-"]
