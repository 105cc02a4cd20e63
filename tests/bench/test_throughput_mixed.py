"""bench/throughput.py --mixed on the CPU: a real `kernelgrade serve` grades a stream over distinct KernelBench
problems with a C++ load_inline kernel among them, twice, and prints both passes side by side."""

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
# The server's start, one C++ build (about 10-20 s here) and eight fast verdicts of tiny problems, each timed on
# the CPU: about two minutes on an idle 2-core machine.
MIXED_S = 600.0


@pytest.mark.slow
def test_a_mixed_stream_is_graded_in_two_passes_over_distinct_problems() -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("KERNELGRADE_")}
    env["PYTHONPATH"] = str(ROOT / "src")
    done = subprocess.run([sys.executable, str(ROOT / "bench" / "throughput.py"), "--device", "cpu",
                           "--mixed", str(FIXTURES), "--no-in-process", "--env", "KERNELGRADE_TIMING_PROFILE=fast",
                           "--env", NO_PCH],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=MIXED_S, check=False)
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-6000:]
    # Three problems' references and, fourth, a C++ kernel on a problem of its own.
    assert "== 4 distinct submissions, 1 device(s) (builds included)" in done.stdout, output[-6000:]
    assert re.search(r"^verdicts/hour\s+\d+\.\d\s+\d+\.\d\s+\d+\.\d\dx$", done.stdout, re.MULTILINE), output[-6000:]
    assert re.search(r"^correct\s+4\s+4$", done.stdout, re.MULTILINE), output[-6000:]
    cases = set(re.findall(r"^(reference:\S+|cpu_correct)\s+1 /", done.stdout, re.MULTILINE))
    assert cases == {"reference:1_tiny_relu", "reference:2_tiny_matmul", "reference:1_tiny_gemm_gelu",
                     "cpu_correct"}, output[-6000:]
    # The builds ran in the first pass's stream (by the judge or, ahead of it, by compile-ahead: which of the two
    # got to each one first varies from run to run); the second pass found every one of them built.
    first, _, second = done.stdout.partition("checks the results record (second pass)")
    assert re.search(r"compile stage: .*(built it|found the build cached)", first), output[-6000:]
    assert re.search(r"^\s+compile stage: found the build cached \(4\)$", second, re.MULTILINE), output[-6000:]


@pytest.mark.slow
def test_a_mixed_pass_cut_at_its_timeout_reports_the_verdicts_in_by_then_and_ends_the_run() -> None:
    """The C++ kernel's build and verdict take longer than the pass's 15 s here (without a precompiled header its
    pass was still unfinished 20 s in, on an idle 2-core host): the first pass is cut, the second never starts."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("KERNELGRADE_")}
    env["PYTHONPATH"] = str(ROOT / "src")
    done = subprocess.run([sys.executable, str(ROOT / "bench" / "throughput.py"), "--device", "cpu",
                           "--mixed", str(FIXTURES), "--no-in-process", "--timeout", "15",
                           "--env", "KERNELGRADE_TIMING_PROFILE=fast", "--env", NO_PCH],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=MIXED_S, check=False)
    output = done.stdout + done.stderr
    cut = re.search(r"at \d+ s: cut at 15 s: (\d) of 4 verdicts in", done.stdout)
    assert cut is not None and int(cut[1]) < 4, output[-6000:]
    assert "second pass" not in done.stdout, output[-6000:]
    if int(cut[1]) == 0:
        assert done.returncode == 1 and "no verdict came in within --timeout 15 s" in done.stdout, output[-6000:]
    else:
        assert done.returncode == 0, output[-6000:]
        assert re.search(rf"^\s+first pass \({cut[1]}/4\)$", done.stdout, re.MULTILINE), output[-6000:]
