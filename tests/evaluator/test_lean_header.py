"""CUDA sources built without torch/extension.h first: which calls get such a build, that a working one is kept,
that a failed one falls back to the call exactly as the submission made it, and, on a GPU, both with real nvcc
builds graded correct."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch

from kernelgrade.evaluator import Verdict, evaluate, precompile
from kernelgrade.evaluator.child.header_pch import with_pch
from kernelgrade.evaluator.child.lean_header import lean_sources, with_lean_header
from kernelgrade.evaluator.sandbox.levels import make_launcher
from kernelgrade.problems import find_builtin
from tests.conftest import RequestFactory

KERNEL = """#include <torch/extension.h>
#include <cuda_runtime.h>

__global__ void k(float* x) { x[0] = 1.0f; }
"""
RELU_CASE = Path(__file__).parents[1] / "cases" / "honest_cuda_relu_large" / "submission.py"


def test_the_include_line_is_blanked_and_the_line_numbers_stay() -> None:
    lean = lean_sources(KERNEL)
    assert lean is not None and len(lean) == 1
    assert "torch/extension.h" not in lean[0] and "#include <cuda_runtime.h>" in lean[0]
    assert lean[0].count("\n") == KERNEL.count("\n")
    spaced = lean_sources(["  # include \"torch/extension.h\"  \nint a;", "int b;"])
    assert spaced == ["\nint a;", "int b;"]
    assert lean_sources("#include <torch/torch.h>\nint a;") == ["\nint a;"]


def test_calls_that_get_no_lean_build() -> None:
    assert lean_sources(None) is None and lean_sources([]) is None
    assert lean_sources("#include <torch/types.h>\n") is None  # nothing to leave out
    assert lean_sources(KERNEL + "namespace py = pybind11;\n") is None
    assert lean_sources(KERNEL + "PYBIND11_MODULE(m, mod) {}\n") is None
    assert lean_sources(KERNEL + "py::object o;\n") is None
    assert lean_sources([KERNEL, 3]) is None
    assert lean_sources("// #include <torch/extension.h>\n") is None  # a comment, not an include


class FakeLoadInline:
    """load_inline's signature; extends the lists it is given, as the real one does. `fails`: "never", "lean" (a
    build whose CUDA sources lack the header) or "always"."""

    def __init__(self, fails: str) -> None:
        self.fails = fails
        self.calls: list[dict[str, Any]] = []

    def __call__(self, name: str, cpp_sources: Any, cuda_sources: Any = None, functions: Any = None,
                 extra_cflags: Any = None, verbose: bool = False) -> str:
        cpp_sources = [cpp_sources] if isinstance(cpp_sources, str) else cpp_sources
        self.calls.append({"name": name, "cpp_sources": list(cpp_sources), "cuda_sources": cuda_sources,
                           "extra_cflags": list(extra_cflags or [])})
        cpp_sources.insert(0, "#include <torch/extension.h>")
        if extra_cflags is not None:
            extra_cflags.append("-DADDED")
        lean = "torch/extension.h" not in "".join(cuda_sources)
        if self.fails == "always" or (self.fails == "lean" and lean):
            raise RuntimeError(f"Error building extension '{name}'")
        return f"module {name}"


def test_a_lean_build_that_works_is_kept_under_a_name_of_its_own() -> None:
    fake, notes = FakeLoadInline("never"), []
    assert with_lean_header(fake, notes.append)("ext", ["decl;"], KERNEL, ["f"]) == "module ext_lean"
    assert len(fake.calls) == 1 and fake.calls[0]["name"] == "ext_lean"
    assert "torch/extension.h" not in fake.calls[0]["cuda_sources"][0]
    assert len(notes) == 1 and "CUDA sources built lean" in notes[0]


def test_a_failed_lean_build_falls_back_to_the_call_as_given() -> None:
    fake, notes = FakeLoadInline("lean"), []
    cpp, flags = ["decl;"], ["-O3"]
    assert with_lean_header(fake, notes.append)("ext", cpp, KERNEL, ["f"], flags) == "module ext"
    lean, given = fake.calls
    assert lean["name"] == "ext_lean" and given["name"] == "ext"
    # The fallback gets the submission's own lists, as the lean build left them: untouched.
    assert given["cpp_sources"] == ["decl;"] and given["extra_cflags"] == ["-O3"]
    assert given["cuda_sources"] == KERNEL
    assert len(notes) == 1 and "lean build of its CUDA sources failed (RuntimeError); building it as given" in notes[0]


def test_a_call_that_fails_as_given_too_raises_the_given_builds_error() -> None:
    fake = FakeLoadInline("always")
    with pytest.raises(RuntimeError, match="extension 'ext'"):
        with_lean_header(fake, lambda _: None)("ext", ["decl;"], KERNEL)
    assert [c["name"] for c in fake.calls] == ["ext_lean", "ext"]


def test_the_compile_childs_chain_of_wrappers_still_sees_the_arguments() -> None:
    """The compile child wraps load_inline with the PCH wrapper and this one; each binds load_inline's
    signature, so each must pass it on."""
    fake, notes, missed = FakeLoadInline("lean"), [], []
    chained = with_lean_header(with_pch(fake, {}, missed.append), notes.append)
    assert chained("ext", "decl;", cuda_sources=KERNEL) == "module ext"
    assert [c["name"] for c in fake.calls] == ["ext_lean", "ext"] and missed == ["cuda-plain", "cuda-plain"]


def test_a_call_without_the_include_is_built_once_as_given() -> None:
    fake, notes = FakeLoadInline("never"), []
    source = KERNEL.replace("#include <torch/extension.h>", "#include <torch/types.h>")
    assert with_lean_header(fake, notes.append)("ext", "decl;", source) == "module ext"
    assert [c["name"] for c in fake.calls] == ["ext"] and notes == []


def test_the_sandboxed_compile_child_tries_the_lean_build_first(make_request: RequestFactory) -> None:
    """On a host without nvcc both builds fail: the lean one first, then the call as given, whose failure is
    the outcome. A real compile child in the real sandbox, so the wiring from request to child is covered."""
    if torch.cuda.is_available():
        pytest.skip("needs a host where a CUDA build fails")
    problem = find_builtin("add_relu")
    assert problem is not None
    source = RELU_CASE.read_text().replace('name="kg_case_relu_large"', 'name="kg_lean_cpu"')
    outcome = precompile(make_request(problem.spec(), source, lean_cuda_header=True), make_launcher("auto"))
    assert outcome.failure is not None and outcome.failure.code == "build_failed"
    assert "kg_lean_cpu: the lean build of its CUDA sources failed" in outcome.log
    assert "building it as given" in outcome.log


@pytest.mark.gpu
@pytest.mark.slow
@pytest.mark.parametrize("needs_header", [False, True], ids=["lean", "falls_back"])
def test_real_cuda_builds_grade_correct_either_way(needs_header: bool, make_request: RequestFactory) -> None:
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU")
    problem = find_builtin("relu")
    assert problem is not None
    source = RELU_CASE.read_text().replace('name="kg_case_relu_large"', f'name="kg_lean_{int(needs_header)}"')
    if needs_header:  # torch::nn is declared by torch/extension.h, not by load_inline's torch/types.h
        anchor = "auto out = torch::empty_like(x);"
        source = source.replace(anchor, f"static_assert(sizeof(torch::nn::ReLUOptions) > 0);\n    {anchor}")
    result = evaluate(make_request(problem.spec(), source, lean_cuda_header=True), make_launcher("auto"))
    assert result.verdict is Verdict.CORRECT, result.failure
    expected = "lean build of its CUDA sources failed" if needs_header else "CUDA sources built lean"
    assert expected in result.compile_log
