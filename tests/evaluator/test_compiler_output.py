"""Picking the compiler's first real errors out of a ninja build log."""

from __future__ import annotations

from kernelgrade.evaluator.judge.compiler_output import first_errors

# The shape of a real failing load_inline build: nvcc errors for cuda.cu first, then g++ for main.cpp.
NINJA_LOG = """[1/3] c++ -MMD -MF main.o.d -DTORCH_EXTENSION_NAME=m -std=c++14 -c /b/main.cpp -o main.o
FAILED: cuda.cuda.o
/usr/local/cuda/bin/nvcc -c /b/cuda.cu -o cuda.cuda.o
/b/cuda.cu(48): error: no suitable constructor exists to convert from "const char [5]" to "c10::Device"
      auto C = torch::empty({N, N}, torch::device("cuda"));
                                    ^
/b/cuda.cu(50): error: identifier "threads" is undefined
/b/cuda.cu(51): error: identifier "blocks" is undefined
/b/cuda.cu(52): error: identifier "grid" is undefined
/b/cuda.cu(53): error: identifier "other" is undefined
FAILED: main.o
In file included from /site/torch/include/torch/extension.h:5,
                 from /b/main.cpp:1:
/site/torch/include/torch/csrc/api/include/torch/all.h:5:2: error: #error C++17 or later compatible compiler is required
    5 | #error C++17 or later compatible compiler is required
      |  ^~~~~
ninja: build stopped: subcommand failed.
"""


def test_errors_are_taken_from_every_failing_unit() -> None:
    text = first_errors(NINJA_LOG, "/b")
    assert "C++17 or later" in text
    assert '<build>/cuda.cu(48): error: no suitable constructor' in text
    assert "identifier \"other\"" not in text  # capped: fallout from the first errors is dropped


def test_source_and_caret_lines_stay_with_their_error() -> None:
    text = first_errors(NINJA_LOG, "/b")
    lines = text.splitlines()
    at = lines.index('<build>/cuda.cu(48): error: no suitable constructor exists to convert from "const char [5]"'
                     ' to "c10::Device"')
    assert "torch::device" in lines[at + 1]
    assert "<torch>/torch/csrc/api/include/torch/all.h" in text
    assert "In file included" not in text
    assert "ninja" not in text


def test_a_log_without_error_lines_falls_back_to_its_tail() -> None:
    log = "\n".join(f"line {i}" for i in range(50)) + "\nSegmentation fault (core dumped)\n"
    text = first_errors(log)
    assert text.splitlines()[-1] == "Segmentation fault (core dumped)"
    assert "line 10" not in text
