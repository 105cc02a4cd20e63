"""`kernelgrade problems list|show|audit` through the real command line entry point."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from kernelgrade.cli import main

DEGENERATE = '''"""The maximum of a million uniform samples: 1.0 on every seed."""
import torch
import torch.nn as nn

KERNELGRADE = {"device": "cpu"}


class Model(nn.Module):
    def forward(self, x):
        return x.max(dim=1).values


def get_inputs():
    return [torch.rand(2, 1_000_000)]


def get_init_inputs():
    return []
'''

no_gpu = pytest.mark.skipif(torch.cuda.is_available(), reason="checks the behaviour without a GPU")


def test_audit_passes_a_healthy_builtin_problem(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["problems", "audit", "add_relu", "matmul_small"]) == 0
    out = capsys.readouterr().out
    assert "add_relu" in out and "matmul_small" in out
    assert "2 problems: 2 ok, 0 warn, 0 fail, 0 skipped" in out


def test_audit_of_a_degenerate_file_fails_with_the_finding(tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "max_of_uniform.py"
    path.write_text(DEGENERATE)
    assert main(["problems", "audit", str(path), "add_relu"]) == 1
    out = capsys.readouterr().out
    assert "max_of_uniform" in out and "FAIL" in out
    assert "[fail] constant_output" in out
    assert "1 ok, 0 warn, 1 fail" in out


def test_audit_reports_a_reference_that_does_not_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "raises.py"
    path.write_text(DEGENERATE.replace("return x.max(dim=1).values", "raise RuntimeError('no such op')"))
    assert main(["problems", "audit", str(path)]) == 1
    assert "the reference does not run on cpu: RuntimeError: no such op" in capsys.readouterr().out


def test_audit_selects_by_suite(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["problems", "audit", "--suite", "no-such-suite"]) == 2
    assert "no problems match" in capsys.readouterr().out


def test_audit_rejects_an_unknown_name(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["problems", "audit", "no_such_problem"]) == 2
    assert "no built-in problem named 'no_such_problem'" in capsys.readouterr().out


def test_audit_rejects_an_unknown_device(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["problems", "audit", "add_relu", "--device", "tpu:0"]) == 2
    assert "unknown device 'tpu:0'" in capsys.readouterr().out


@no_gpu
def test_audit_skips_gpu_problems_without_a_gpu(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["problems", "audit", "relu", "add_relu"]) == 0
    out = capsys.readouterr().out
    assert "relu      skipped: needs a CUDA device" in out
    assert "1 ok, 0 warn, 0 fail, 1 skipped" in out


@no_gpu
def test_audit_refuses_a_cuda_device_that_is_not_there(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["problems", "audit", "add_relu", "--device", "cuda"]) == 2
    assert "not a visible CUDA device" in capsys.readouterr().out


def test_list_shows_every_suite(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["problems", "list", "--suite", "level2"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 1 + 8
    assert any(line.startswith("masked_softmax_matmul ") for line in lines)


def test_show_prints_metadata_and_source(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["problems", "show", "conv2d_small"]) == 0
    out = capsys.readouterr().out
    assert "suite:     cpu (level 1)" in out
    assert "class Model(nn.Module)" in out
