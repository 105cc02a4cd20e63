"""bench/throughput.py on the CPU path, end to end: a real `kernelgrade serve`, real C++ builds (one that does
not compile, one with wrong values, one correct), then KernelBench's in-process protocol on the correct one."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import psutil
import pytest

from tests.service.servers import NO_PCH

ROOT = Path(__file__).resolve().parents[2]
# Three C++ builds (about 20-35 s each on 2 cores, the compile error included) and one more in the bench's own
# process; the fast profile keeps grading itself to seconds.
BENCH_S = 420.0
DEVICE_STAGES = ("load", "correctness", "timing", "compiled_baseline", "first_attempt")
# A SIGKILLed process is gone at once; this only bounds the wait for the kernel to reap it on a loaded host.
KILLED_S = 30.0


def run_bench(out: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("KERNELGRADE_")}
    env["PYTHONPATH"] = str(ROOT / "src")
    command = [sys.executable, str(ROOT / "bench" / "throughput.py"), "--device", "cpu", "--n", "3",
               "--env", "KERNELGRADE_TIMING_PROFILE=fast", "--env", NO_PCH, "--json", str(out)]
    process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               text=True)
    try:
        stdout, _ = process.communicate(timeout=BENCH_S)
    except subprocess.TimeoutExpired:
        kill_tree(process.pid)
        stdout, _ = process.communicate()
        pytest.fail(f"bench/throughput.py ran past {BENCH_S:.0f} s:\n{stdout[-6000:]}")
    return subprocess.CompletedProcess(command, process.returncode, stdout, "")


def kill_tree(pid: int) -> None:
    """The bench, the server it started and that server's children, even those in sessions of their own (run
    and compile children): all found before any is killed, since a killed parent's children could no longer be."""
    try:
        root = psutil.Process(pid)
        tree = [root, *root.children(recursive=True)]
    except psutil.NoSuchProcess:
        return
    for process in tree:
        with contextlib.suppress(psutil.NoSuchProcess):
            process.kill()
    psutil.wait_procs(tree[1:], timeout=KILLED_S)  # the bench itself is reaped by its Popen


@pytest.mark.slow
def test_cpu_throughput_bench_grades_three_submissions_and_reports_them(tmp_path: Path) -> None:
    out = tmp_path / "throughput.json"
    done = run_bench(out)
    assert done.returncode == 0, done.stdout[-6000:]
    assert "verdicts/hour" in done.stdout and "kernelbench in-process:" in done.stdout
    report = json.loads(out.read_text())
    assert report["device"] == "cpu" and report["n"] == 3 and len(report["runs"]) == 1
    run = report["runs"][0]
    _check_counts(run)
    _check_times(run)
    _check_stages(run)
    checks = {c["name"] for c in run["checks"]}
    assert {"sandbox", "precision policy", "timing method", "correctness trials run"} <= checks
    in_process = report["in_process"]
    assert [(g["case"], g["correct"]) for g in in_process["graded"]] == [("cpu_correct", True)]
    assert in_process["s_per_verdict"] > 0 and in_process["graded"][0]["mean_ms"] > 0
    # Built beforehand in processes of their own, and only loaded when graded (a build takes seconds here).
    assert in_process["graded"][0]["seconds"] < in_process["builds_s"], in_process


def _check_counts(run: dict[str, Any]) -> None:
    counts = {c["name"]: c["count"] for c in run["verdicts"]}
    assert counts == {"correct": 1, "compile_error/build_failed": 1, "incorrect/values": 1}, run["verdicts"]
    assert run["n"] == 3 and run["mismatches"] == [] and run["devices"] == 1


def _check_times(run: dict[str, Any]) -> None:
    wall = run["wall_s"]
    assert wall > 0 and run["verdicts_per_hour"] == pytest.approx(3 * 3600.0 / wall)
    assert 0 < run["latency_p50_s"] <= run["latency_p95_s"] <= wall + 1e-6
    assert 0 < run["busy_fraction"] <= 1.0
    assert run["build_pass_s"] is None  # builds were part of the measured stream


def _check_stages(run: dict[str, Any]) -> None:
    stages = {s["label"]: s for s in run["stages"]}
    assert {"validate", "compile", "child_start", "load", "correctness", "timing"} <= set(stages)
    assert stages["compile"]["evaluations"] == 3 and stages["timing"]["evaluations"] == 1
    device = sum(s["total_s"] for label, s in stages.items() if label in DEVICE_STAGES)
    assert run["device_s_total"] == pytest.approx(device)
    assert run["device_s_per_correct"] is not None and run["device_s_per_correct"] > 0
    shares = {s["label"]: s for s in run["judge_time"]}
    # This server's results give evaluate()'s own wall time, so the rest of a job is split in two.
    assert {"in evaluate(), between stages", "in the judge, around evaluate()"} <= set(shares), shares
    assert shares["device stages"]["s_per_verdict"] == pytest.approx(device / 3)
    assert shares["device stages"]["fraction"] == pytest.approx(run["busy_fraction"])
    assert sum(s["fraction"] for s in shares.values()) == pytest.approx(1.0)
    # Jobs are timed by the server's wall clock and stages by a monotonic one: a few ms either way.
    assert all(s["s_per_verdict"] > -0.05 for s in shares.values()), shares
    _check_case_parts(run)


def _check_case_parts(run: dict[str, Any]) -> None:
    """The one correct verdict's device seconds, part by part: the parts lie inside its device stages."""
    [case] = run["case_parts"]
    parts = {p["label"]: p["median_s"] for p in case["parts"]}
    assert case["case"] == "cpu_correct" and {"load", "correctness:call", "timing:candidate"} <= set(parts), parts
    assert not {"correctness", "timing", "compile", "child_start"} & set(parts), parts
    [device] = [row["median_s"] for row in run["by_case"] if row["label"] == "cpu_correct"]
    assert 0 < sum(parts.values()) <= device + 1e-6
    [spread] = run["speedups"]
    assert spread["case"] == "cpu_correct" and spread["n"] == 1
    assert 0 < spread["low"] == spread["median"] == spread["high"]
