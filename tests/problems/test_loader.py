"""Loading problem files: the required names, metadata evaluated without running the file, hashing."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from kernelgrade.evaluator import DeviceKind, PrecisionKind
from kernelgrade.evaluator.request import TorchOps
from kernelgrade.problems import ProblemFormatError, load_problem_file, load_problem_source

BODY = '''
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return x * 2


def get_inputs():
    return [torch.randn(N, N)]


def get_init_inputs():
    return []
'''


def source(meta: str = "", header: str = "N = 64\n") -> str:
    return f'"""Doubles a matrix."""\n{header}{meta}\n{BODY}'


def test_hash_is_sha256_of_the_file_and_changes_with_any_edit() -> None:
    text = source()
    first = load_problem_source(text, "double")
    assert first.content_hash == hashlib.sha256(text.encode()).hexdigest()
    assert load_problem_source(text, "other_name").content_hash == first.content_hash
    assert load_problem_source(text + "# a comment\n", "double").content_hash != first.content_hash
    assert load_problem_source(text.replace("x * 2", "x * 3"), "double").content_hash != first.content_hash


def test_metadata_arithmetic_uses_the_files_own_constants() -> None:
    meta = '''M = N * 2
KERNELGRADE = {
    "device": "cpu", "precision": "tolerance", "atol": 1e-3, "rtol": 2e-3,
    "suite": "mine", "level": 3, "tags": ["elementwise", "demo"],
    "flops": 2 * M * N**2 - -N,
    "bytes": (M + N) * 4 // 3 / 2,
}'''
    problem = load_problem_source(source(meta), "double")
    assert problem.device is DeviceKind.CPU
    assert problem.precision.kind is PrecisionKind.TOLERANCE
    assert (problem.precision.atol, problem.precision.rtol) == (1e-3, 2e-3)
    assert (problem.suite, problem.level, problem.tags) == ("mine", 3, ("elementwise", "demo"))
    assert problem.flops == 2 * 128 * 64**2 + 64
    assert problem.bytes_moved == (128 + 64) * 4 // 3 / 2


def test_defaults_without_metadata_are_kernelbenchs() -> None:
    problem = load_problem_source(source(), "double", suite="kb", level=2)
    assert problem.device is DeviceKind.CUDA
    assert problem.precision.kind is PrecisionKind.FP32
    assert (problem.precision.atol, problem.precision.rtol) == (1e-4, 1e-4)
    assert (problem.suite, problem.level, problem.flops, problem.bytes_moved) == ("kb", 2, None, None)
    assert problem.description == "Doubles a matrix."
    assert problem.torch_ops is TorchOps.REPORT
    assert problem.spec().torch_ops is TorchOps.REPORT


def test_torch_ops_forbid_reaches_the_spec() -> None:
    problem = load_problem_source(source('KERNELGRADE = {"torch_ops": "forbid"}'), "double")
    assert problem.torch_ops is TorchOps.FORBID
    assert problem.spec().torch_ops is TorchOps.FORBID


@pytest.mark.parametrize("value", ['"allow"', '"FORBID"', "1", "[1]"])
def test_rejects_a_bad_torch_ops_value_naming_the_key(value: str) -> None:
    with pytest.raises(ProblemFormatError, match=r"bad KERNELGRADE value: torch_ops must be 'report' or 'forbid'"):
        load_problem_source(source(f'KERNELGRADE = {{"torch_ops": {value}}}'), "broken")


@pytest.mark.parametrize("missing", ["Model", "get_inputs", "get_init_inputs"])
def test_rejects_a_file_missing_a_required_name(missing: str) -> None:
    text = source().replace(f"def {missing}(", "def renamed_(").replace(f"class {missing}(", "class Renamed(")
    with pytest.raises(ProblemFormatError, match=f"defines no {missing}"):
        load_problem_source(text, "broken")


def test_rejects_a_syntax_error_with_its_line() -> None:
    with pytest.raises(ProblemFormatError, match="line 6"):
        load_problem_source(source().replace("import torch.nn as nn", "import torch.nn as"), "broken")


@pytest.mark.parametrize("meta", [
    'KERNELGRADE = {"device": "tpu"}',
    'KERNELGRADE = {"precision": "bf16"}',
    'KERNELGRADE = {"flops": UNKNOWN * 2}',
    'KERNELGRADE = {"flops": len([1, 2])}',
    'KERNELGRADE = [1, 2]',
    'KERNELGRADE = {"flops": 10 ** 10 ** 10}',
    'KERNELGRADE = {"flops": "ab" * 3}',
    'KERNELGRADE = {"flops": N / 0}',
    'KERNELGRADE = {"level": "first"}',
    'KERNELGRADE = {"tags": 5}',
], ids=["device", "precision", "unknown-name", "call", "not-a-dict", "huge-power", "string-arithmetic",
        "division-by-zero", "level", "tags"])
def test_rejects_bad_metadata_with_a_format_error(meta: str) -> None:
    with pytest.raises(ProblemFormatError, match="KERNELGRADE"):
        load_problem_source(source(meta), "broken")


def test_non_numeric_helper_constants_are_ignored_not_fatal() -> None:
    problem = load_problem_source(source('SHAPE = (N, N)\nNAME = "x" * 3\nKERNELGRADE = {"flops": N}'), "double")
    assert problem.flops == 64


def test_load_problem_file_names_the_problem_after_the_file(tmp_path: Path) -> None:
    path = tmp_path / "double_it.py"
    path.write_text(source())
    problem = load_problem_file(path, suite="files")
    assert (problem.name, problem.suite, problem.source) == ("double_it", "files", source())
