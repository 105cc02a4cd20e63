"""`kernelgrade eval` as a user runs it: a real process, real grading, exit codes, JSON and JUnit."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

CASES = Path(__file__).resolve().parent.parent / "cases"
HONEST = CASES / "ignores_own_get_inputs" / "submission.py"
WRONG = CASES / "wrong_dtype" / "submission.py"


def kernelgrade(*args: str, data_dir: Path, **settings: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "KERNELGRADE_DATA_DIR": str(data_dir), **settings}
    return subprocess.run([sys.executable, "-m", "kernelgrade.cli", *args], capture_output=True, text=True,
                          env=env, timeout=600, check=False)


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    return tmp_path / "data"


def test_correct_submission_exits_0_with_a_table_and_speedup(data_dir: Path) -> None:
    done = kernelgrade("eval", "add_relu", str(HONEST), "--quick", data_dir=data_dir)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "verdict     CORRECT" in done.stdout
    assert "speedup" in done.stdout
    assert "[correctness] correctness 5/7" in done.stderr  # live progress, one line per change when piped


def test_json_output_round_trips(data_dir: Path) -> None:
    done = kernelgrade("eval", "add_relu", str(HONEST), "--no-timing", "--json", data_dir=data_dir)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["verdict"] == "correct"
    assert len(result["trials"]) == 7
    assert result["environment"]["device_kind"] == "cpu"


def test_failing_verdict_exits_1_and_writes_a_junit_failure(data_dir: Path, tmp_path: Path) -> None:
    report = tmp_path / "report.xml"
    done = kernelgrade("eval", "add_relu", str(WRONG), "--no-timing", "--junit", str(report), data_dir=data_dir)
    assert done.returncode == 1
    assert "INCORRECT" in done.stdout
    suite = ET.parse(report).getroot()
    assert suite.get("failures") == "1"
    failure = suite.find("testcase/failure")
    assert failure is not None
    assert failure.get("type") == "incorrect"
    assert "dtype" in (failure.get("message") or "")


def test_min_speedup_turns_a_slow_correct_result_into_exit_1(data_dir: Path) -> None:
    done = kernelgrade("eval", "add_relu", str(HONEST), "--quick", "--min-speedup", "1000", data_dir=data_dir)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "verdict     CORRECT" in done.stdout


@pytest.mark.parametrize("args", [
    ("eval", "no_such_problem", str(HONEST)),
    ("eval", "add_relu", "/nonexistent/submission.py"),
    ("eval", "square_matmul", str(HONEST), "--device", "cuda:7"),
])
def test_usage_errors_exit_2_with_a_message(args: tuple[str, ...], data_dir: Path) -> None:
    done = kernelgrade(*args, data_dir=data_dir)
    assert done.returncode == 2
    assert any(line.startswith("error: ") for line in done.stderr.splitlines()), done.stderr


def test_a_bad_setting_exits_2_naming_the_variable_and_what_is_accepted(data_dir: Path) -> None:
    done = kernelgrade("eval", "add_relu", str(HONEST), data_dir=data_dir, KERNELGRADE_SANDBOX="docker")
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == "error: KERNELGRADE_SANDBOX='docker': use auto, bwrap, unshare or none\n"


def test_no_sandbox_is_refused_without_the_opt_out(data_dir: Path) -> None:
    done = kernelgrade("eval", "add_relu", str(HONEST), "--no-timing", "--sandbox", "none", data_dir=data_dir)
    assert done.returncode == 2 and done.stdout == ""
    assert "apt-get install bubblewrap" in done.stderr and "KERNELGRADE_ALLOW_UNSANDBOXED=1" in done.stderr


def test_an_unsandboxed_run_says_so_in_the_table_json_and_stderr(data_dir: Path) -> None:
    opted_out = {"KERNELGRADE_SANDBOX": "none", "KERNELGRADE_ALLOW_UNSANDBOXED": "1"}
    table = kernelgrade("eval", "add_relu", str(HONEST), "--no-timing", data_dir=data_dir, **opted_out)
    assert table.returncode == 0, table.stderr
    assert "warning     UNSANDBOXED" in table.stdout and "warning: UNSANDBOXED" in table.stderr
    as_json = kernelgrade("eval", "add_relu", str(HONEST), "--no-timing", "--json", data_dir=data_dir, **opted_out)
    result = json.loads(as_json.stdout)
    assert result["environment"]["sandbox"] == "none" and result["warnings"][0].startswith("UNSANDBOXED")
