"""bench/kernelbench_sweep.py on the CPU: a real `kernelgrade serve` grades tiny KernelBench-format problems'
own references, renamed ModelNew, and the sweep reports each verdict and a summary."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.service.servers import NO_PCH

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = Path(__file__).resolve().parent / "kernelbench"
KERNELS = Path(__file__).resolve().parent / "kernelbench_kernels"
# The server's start (torch, migrations, a judge), two pure-PyTorch verdicts under the fast profile and one
# C++ kernel's (its build about 20 s): under a minute on an idle 2-core machine.
SWEEP_S = 300.0


def run_sweep(*args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("KERNELGRADE_")}
    env["PYTHONPATH"] = str(ROOT / "src")
    return subprocess.run([sys.executable, str(ROOT / "bench" / "kernelbench_sweep.py"), str(FIXTURES), "--env", NO_PCH,
                           *args],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=SWEEP_S, check=False)


@pytest.mark.slow
def test_the_sweep_grades_each_reference_correct_and_summarises() -> None:
    done = run_sweep("--level", "1", "--limit", "1", "--level", "2", "--kernels", str(KERNELS))
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-6000:]
    rows = {m.group(1): m.group(2) for m in re.finditer(r"^(\d+_tiny_\w+(?: \[\S+\])?)\s+(\S+)", done.stdout,
                                                         re.MULTILINE)}
    assert rows == {"1_tiny_relu": "correct", "1_tiny_gemm_gelu": "correct",
                    "1_tiny_relu [1_tiny_relu.py]": "correct"}, output[-6000:]
    assert "2 problems: correct 2" in done.stdout
    assert "1 naive kernels: 1_tiny_relu correct" in done.stdout
    assert "speedups outside 0.9-1.1x:" in done.stdout and "slowest (seconds over all stages): 1_tiny_" in done.stdout
    assert re.search(r"^1_tiny_relu .*correctness=\d+\.\d+ .*timing=\d+\.\d+", done.stdout, re.MULTILINE)


def test_a_folder_without_the_levels_asked_for_is_refused() -> None:
    done = run_sweep("--level", "3")
    assert done.returncode == 2 and "no problems of levels [3]" in done.stderr


def test_a_sweep_goes_on_without_the_problems_an_earlier_output_shows_correct(tmp_path: Path) -> None:
    earlier = tmp_path / "earlier.txt"
    earlier.write_text("#   1/3 1_tiny_relu                      correct   1.002  -  -  correctness=0.10\n"
                       "#   2/3 1_tiny_relu [1_tiny_relu.py]     incorrect -      -  -\n"
                       "2_tiny_matmul                            correct   0.998  -  -  timing=0.20\n"
                       "1_tiny_gemm_gelu                         runtime_error:x  -  -  -\n")
    done = run_sweep("--level", "1", "--skip-correct", str(earlier))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "# left out 2 problems" in done.stdout and "nothing left to grade" in done.stdout


def _relu_problem(elements: str, forward: str = "torch.relu(x)") -> str:
    return (f"import torch\nclass Model(torch.nn.Module):\n    def forward(self, x):\n        return {forward}\n"
            f"def get_inputs():\n    return [torch.randn({elements})]\ndef get_init_inputs():\n    return []\n")


def test_the_problems_needing_least_memory_come_first_and_unknown_ones_last(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(ROOT / "bench"))
    import kernelbench_sweep

    level = tmp_path / "level1"
    level.mkdir()
    (level / "1_Large.py").write_text(_relu_problem("4096, 64"))
    (level / "2_Unknown.py").write_text(_relu_problem("8", "x * x.sum().item()"))  # no value on meta
    (level / "3_Small.py").write_text(_relu_problem("16"))
    problems = kernelbench_sweep.selected(tmp_path, [1], None)
    assert [p.name for p in problems] == ["1_large", "2_unknown", "3_small"]
    assert [p.name for p in kernelbench_sweep.smallest_first(problems)] == ["3_small", "1_large", "2_unknown"]


def test_a_long_problem_an_earlier_output_shows_correct_by_its_cut_name_is_left_out(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(ROOT / "bench"))
    import kernelbench_sweep

    level = tmp_path / "level1"
    level.mkdir()
    (level / "75_conv_transposed_2D_asymmetric_input_asymmetric_kernel_strided_grouped.py").write_text(
        _relu_problem("16"))
    (level / "76_conv_standard_1D_dilated_strided.py").write_text(_relu_problem("16"))
    problems = kernelbench_sweep.selected(tmp_path, [1], None)
    rows = [kernelbench_sweep.Row(p.name, kernelbench_sweep.REFERENCE, verdict, "", None, None, None, ())
            for p, verdict in zip(problems, ["correct", "incorrect"], strict=True)]
    output = "".join(f"# {i}/2 {kernelbench_sweep._line(row)}\n" for i, row in enumerate(rows, 1))
    assert len(problems[0].name) > kernelbench_sweep.NAME_WIDTH
    assert [p.name for p in kernelbench_sweep.not_shown_correct(problems, output)] == [problems[1].name]


def test_the_summary_counts_verdicts_held_on_both_sides_and_names_the_others(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(ROOT / "bench"))
    import kernelbench_sweep

    held = "held until the whole rep is enqueued"
    waited = "off: forward() waited for the device while the stream was held"
    holds = [f"reference: {held}; candidate: {held}", f"reference: {waited}; candidate: {held}",
             "reference: not applicable (CPU); candidate: not applicable (CPU)", ""]
    rows = [kernelbench_sweep.Row(f"{i}_p", kernelbench_sweep.REFERENCE, "correct", "", 1.0, None, None, (), "", h)
            for i, h in enumerate(holds)]
    lines = kernelbench_sweep.holds(rows)
    assert lines[0] == "stream hold: both sides held in 1 of 2 timed verdicts"
    assert lines[1:] == [f"  not held: 1_p: reference: {waited}; candidate: {held}"]
    assert kernelbench_sweep.holds(rows[2:]) == []


def test_a_repeated_sweep_submits_each_reference_n_times_and_gives_each_problem_s_spread(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(ROOT / "bench"))
    import kernelbench_sweep

    problems = kernelbench_sweep.selected(FIXTURES, [1], None)
    chosen = kernelbench_sweep.submissions(problems, None, repeat=3)
    assert [s.problem for s in chosen] == [p.name for p in problems for _ in range(3)]
    assert all(s.force and s.model == kernelbench_sweep.REFERENCE for s in chosen)
    # The service refuses a second copy of a source that is still queued: each grading's source differs.
    assert len({s.source for s in chosen}) == len(chosen)

    def row(problem: str, speedup: float | None) -> kernelbench_sweep.Row:
        return kernelbench_sweep.Row(problem, kernelbench_sweep.REFERENCE, "correct", "", speedup, None, None, ())

    rows = [row("lstm", 0.8), row("lstm", 1.0), row("lstm", 1.3), row("relu", 1.0), row("gru", 1.0), row("gru", None)]
    assert kernelbench_sweep.spreads(rows) == [
        "speedups of problems graded more than once: median (lowest-highest), outside the band",
        "  lstm: 1.000 (0.800-1.300), 2 of 3"]
    assert kernelbench_sweep.spreads(rows[3:]) == []
    assert kernelbench_sweep.summary(rows)[0] == "6 gradings of 3 problems: correct 6"
