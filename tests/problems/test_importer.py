"""Scanning a KernelBench-style folder: names, suites and levels from the layout, defaults for files without
metadata, and bad files reported one by one without stopping the scan."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
import torch

from kernelgrade.evaluator import DeviceKind, PrecisionKind
from kernelgrade.evaluator.host.reference import Reference
from kernelgrade.problems import Problem, ScanResult, problem_name, scan_folder

# A level-1 file as KernelBench writes it: no metadata, inputs on the CPU.
MATMUL = '''import torch
import torch.nn as nn

class Model(nn.Module):
    """
    Simple model that performs a single square matrix multiplication (C = A * B)
    """
    def __init__(self):
        super(Model, self).__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return torch.matmul(A, B)

N = 64

def get_inputs():
    A = torch.randn(N, N)
    B = torch.randn(N, N)
    return [A, B]

def get_init_inputs():
    return []  # No special initialization inputs needed
'''

CONV_RELU = '''import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size)

    def forward(self, x):
        return torch.relu(self.conv(x))

def get_inputs():
    return [torch.randn(2, 3, 16, 16)]

def get_init_inputs():
    return [3, 8, 3]
'''

WITH_METADATA = MATMUL + '''
KERNELGRADE = {"device": "cpu", "precision": "tf32", "flops": 2 * N**3, "tags": ["mine"]}
'''

NO_GET_INPUTS = MATMUL.replace("def get_inputs():", "def make_inputs():")


def write(root: Path, relative: str, text: str | bytes) -> Path:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)
    return path


@pytest.fixture
def kernelbench(tmp_path: Path) -> Path:
    root = tmp_path / "KernelBench"
    write(root, "level1/1_Square_matrix_multiplication_.py", MATMUL)
    write(root, "level1/2_Not a problem.py", NO_GET_INPUTS)
    write(root, "level1/3_Syntax_error.py", "def broken(:\n")
    write(root, "level1/4_Latin1.py", MATMUL.encode() + b"# caf\xe9\n")
    write(root, "level1/__init__.py", "")
    write(root, "level1/README.md", "not python")
    write(root, "level2/1_Conv2D_ReLU.py", CONV_RELU)
    write(root, "level2/deeper/levelX/7-With Metadata.py", WITH_METADATA)
    write(root, "level3/1_SQUARE_matrix_multiplication.py", MATMUL)
    write(root, ".git/hooks/x.py", MATMUL)
    write(root, "_private/helper.py", MATMUL)
    return root


def by_name(result: ScanResult) -> dict[str, Problem]:
    return {p.name: p for p in result.problems}


def test_scan_reads_names_suites_and_levels_from_the_layout(kernelbench: Path) -> None:
    problems = by_name(scan_folder(kernelbench))
    assert sorted(problems) == ["1_conv2d_relu", "1_square_matrix_multiplication", "7_with_metadata"]
    matmul = problems["1_square_matrix_multiplication"]
    assert (matmul.suite, matmul.level) == ("kernelbench", 1)
    assert (problems["1_conv2d_relu"].suite, problems["1_conv2d_relu"].level) == ("kernelbench", 2)
    # The innermost levelN folder wins; `levelX` is not one.
    assert problems["7_with_metadata"].level == 2


def test_files_without_metadata_get_kernelbench_defaults(kernelbench: Path) -> None:
    matmul = by_name(scan_folder(kernelbench))["1_square_matrix_multiplication"]
    assert matmul.device is DeviceKind.CUDA
    assert matmul.precision.kind is PrecisionKind.FP32
    assert (matmul.flops, matmul.bytes_moved, matmul.tags) == (None, None, ())
    assert matmul.source == MATMUL
    assert matmul.content_hash == hashlib.sha256(MATMUL.encode()).hexdigest()


def test_a_files_own_metadata_is_kept(kernelbench: Path) -> None:
    problem = by_name(scan_folder(kernelbench))["7_with_metadata"]
    assert problem.device is DeviceKind.CPU
    assert problem.precision.kind is PrecisionKind.TF32
    assert (problem.flops, problem.tags) == (2 * 64**3, ("mine",))


def test_bad_files_are_reported_each_and_the_rest_still_load(kernelbench: Path) -> None:
    result = scan_folder(kernelbench)
    errors = {e.path.relative_to(kernelbench).as_posix(): e.message for e in result.errors}
    assert sorted(errors) == ["level1/2_Not a problem.py", "level1/3_Syntax_error.py", "level1/4_Latin1.py",
                              "level3/1_SQUARE_matrix_multiplication.py"]
    assert "defines no get_inputs" in errors["level1/2_Not a problem.py"]
    assert "line 1" in errors["level1/3_Syntax_error.py"]
    assert "utf-8" in errors["level1/4_Latin1.py"]
    assert "same name as" in errors["level3/1_SQUARE_matrix_multiplication.py"]
    assert len(result.problems) == 3


def test_scanning_one_level_folder_takes_the_suite_from_its_parent(kernelbench: Path) -> None:
    result = scan_folder(kernelbench / "level2")
    assert [(p.name, p.suite, p.level) for p in result.problems] == [
        ("1_conv2d_relu", "kernelbench", 2), ("7_with_metadata", "kernelbench", 2)]
    assert result.errors == ()


def test_the_caller_can_name_the_suite(kernelbench: Path) -> None:
    result = scan_folder(kernelbench / "level2", suite="kb-v0.1")
    assert {p.suite for p in result.problems} == {"kb-v0.1"}


def test_scanning_twice_gives_the_same_problems(kernelbench: Path) -> None:
    assert scan_folder(kernelbench) == scan_folder(kernelbench)


def test_an_imported_problem_runs(kernelbench: Path) -> None:
    matmul = by_name(scan_folder(kernelbench))["1_square_matrix_multiplication"]
    reference = Reference(matmul.spec(), torch.device("cpu"), weight_seed=0)
    a, b = reference.make_inputs(seed=3)
    (out,) = reference.expected([a, b]).refs
    assert torch.equal(out, a @ b)


def test_a_path_that_is_not_a_folder_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(NotADirectoryError):
        scan_folder(tmp_path / "missing")


@pytest.mark.parametrize(("stem", "name"), [
    ("1_Square_matrix_multiplication_", "1_square_matrix_multiplication"),
    ("23_Softmax", "23_softmax"),
    ("7-With Metadata", "7_with_metadata"),
    ("Conv3d__Mish..Tanh", "conv3d_mish_tanh"),
    ("___", ""),
])
def test_problem_names_are_lowercase_and_safe(stem: str, name: str) -> None:
    assert problem_name(stem) == name
