"""Timing under PyTorch's default switches (a problem's `timing_flags`), and the lock that keeps the judge
threads of one process from timing or checking under each other's switches."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import torch

from kernelgrade.evaluator import TimingFlags, Verdict, evaluate
from kernelgrade.evaluator.integrity import precision_flags
from kernelgrade.evaluator.sandbox.launcher import SubprocessLauncher
from kernelgrade.problems import load_problem_source
from tests.conftest import RequestFactory

PROBLEM = '''
import torch
import torch.nn as nn

KERNELGRADE = {"device": "cpu", "precision": "fp32", "timing_flags": "pytorch_default"}


class Model(nn.Module):
    def forward(self, x):
        return torch.relu(x) * 2


def get_inputs():
    return [torch.randn(256, 256)]


def get_init_inputs():
    return []
'''

SUBMISSION = '''
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        return torch.clamp_min(x, 0) * 2
'''


def test_the_loader_reads_timing_flags() -> None:
    assert load_problem_source(PROBLEM, "relu2").spec().timing_flags is TimingFlags.PYTORCH_DEFAULT


def test_held_switches_to_pytorchs_defaults_and_back() -> None:
    with precision_flags.held(TimingFlags.PYTORCH_DEFAULT):
        assert torch.backends.cudnn.allow_tf32
        assert not torch.backends.cuda.matmul.allow_tf32
    assert not torch.backends.cudnn.allow_tf32


def test_strict_work_waits_for_work_under_pytorchs_defaults() -> None:
    seen: list[bool] = []

    def strict_reader() -> None:
        with precision_flags.held():
            seen.append(bool(torch.backends.cudnn.allow_tf32))

    with precision_flags.held(TimingFlags.PYTORCH_DEFAULT):
        reader = threading.Thread(target=strict_reader)
        reader.start()
        time.sleep(0.2)
        assert seen == []  # it is waiting, not reading the defaults' switches
    reader.join(timeout=5)
    assert seen == [False]


def test_a_problem_timed_under_pytorchs_defaults_says_so(make_request: RequestFactory, tmp_path: Path) -> None:
    problem = load_problem_source(PROBLEM, "relu2").spec()
    result = evaluate(make_request(problem, SUBMISSION), SubprocessLauncher())
    assert result.verdict is Verdict.CORRECT, result.failure
    assert result.method is not None and result.method.precision_flags.startswith("PyTorch's defaults")
    assert not any(f.code == "precision_flags_changed" for f in result.findings)
    assert not torch.backends.cudnn.allow_tf32


def test_the_snapshot_sees_autocast_switched_on_for_either_device_type() -> None:
    before = precision_flags.snapshot()
    for device_type in ("cpu", "cuda"):
        torch.set_autocast_enabled(device_type, True)
        try:
            assert precision_flags.snapshot()[f"autocast_{device_type}"] == "True"
        finally:
            torch.set_autocast_enabled(device_type, False)
    assert precision_flags.snapshot() == before
