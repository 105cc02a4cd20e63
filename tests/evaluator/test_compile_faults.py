"""The compile stage when a build ends badly: killed with its judge, past its wall limit, past its CPU limit.
Real judges, real sandboxed compile children, real C++ builds (the slow ones)."""

from __future__ import annotations

import dataclasses
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from kernelgrade.evaluator import CompileOutcome, EvalRequest, Limits, precompile
from kernelgrade.evaluator.judge.compile import CPU_MARGIN_S, BuildLimits
from kernelgrade.evaluator.judge.pipeline import build_target
from kernelgrade.evaluator.sandbox.launcher import Launcher
from kernelgrade.evaluator.sandbox.levels import SandboxUnavailable, make_launcher
from kernelgrade.evaluator.wire import build_lock
from kernelgrade.problems import find_builtin
from tests.conftest import TEST_LIMITS, RequestFactory

CPP_SOURCE = (Path(__file__).parents[1] / "cases" / "cpu_correct" / "submission.py").read_text()
# A build slow by construction, whatever the machine: a constant evaluated at compile time, about 20 s of g++
# on a 2-core CI machine (8 million iterations of the compiler's constexpr interpreter, past g++'s default
# operation limit, hence the flag), on top of the extension's own build (8-20 s, with or without a precompiled
# header): no machine finishes it within SHORT_COMPILE_S, a few times faster than this one included. More
# would only slow the test's second, complete build.
SLOW_CPP_SOURCE = CPP_SOURCE.replace(
    "#include <torch/extension.h>\n",
    "#include <torch/extension.h>\n"
    "constexpr long spin(long n) { long s = 0; for (long i = 0; i < n; ++i)"
    " for (long j = 0; j < 200000; ++j) s += i ^ j; return s; }\n"
    "static_assert(spin(40) != 1, \"evaluated while compiling\");\n", 1).replace(
    "verbose=False)", "verbose=False, extra_cflags=['-fconstexpr-ops-limit=100000000000'])", 1)
# The compile child imports torch (seconds) and then starts g++ on SLOW_CPP_SOURCE: this long, the build is
# surely started and surely not finished.
SHORT_COMPILE_S = 12.0
# Until the killed judge's build holds its lock: the judge imports torch, starts its sandboxed child, which
# imports torch too; far less on an idle machine.
BUILD_STARTS_S = 180.0
# A sandbox dies with its judge (bwrap --die-with-parent, unshare --kill-child) within moments.
SANDBOX_DIES_S = 10.0

JUDGE = """
import sys
from pathlib import Path
from kernelgrade.evaluator import EvalRequest, precompile
from kernelgrade.evaluator.sandbox.levels import make_launcher
from kernelgrade.problems import find_builtin
source, cache_dir, work_root = sys.argv[1:4]
problem = find_builtin("add_relu").spec()
request = EvalRequest(problem=problem, submission=Path(source).read_text(), cache_dir=Path(cache_dir),
                      work_root=Path(work_root), compile_jobs=2)
precompile(request, make_launcher("auto"))
"""


@pytest.fixture(scope="module")
def launcher() -> Launcher:
    try:
        return make_launcher("auto")
    except SandboxUnavailable as exc:
        pytest.skip(f"no sandbox here: {exc}")


def add_relu_request(make_request: RequestFactory, source: str, cache_dir: Path, limits: Limits = TEST_LIMITS
                     ) -> EvalRequest:
    problem = find_builtin("add_relu")
    assert problem is not None
    return make_request(problem.spec(), source, cache_dir=cache_dir, limits=limits)


def wait_for(condition: Callable[[], object], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out after {timeout:.0f} s waiting for {what}"
        time.sleep(0.1)


def built(outcome: CompileOutcome) -> None:
    assert outcome.failure is None, f"{outcome.failure}\n{outcome.log[-3000:]}"
    assert not outcome.cache_hit and outcome.builds == 1
    assert build_lock.locks_in(outcome.extensions_dir) == []


@pytest.mark.slow
def test_a_build_killed_with_its_judge_leaves_nothing_that_blocks_the_next(
        make_request: RequestFactory, launcher: Launcher, tmp_path: Path) -> None:
    cache_dir, source = tmp_path / "cache", tmp_path / "submission.py"
    source.write_text(CPP_SOURCE)
    judge = subprocess.Popen([sys.executable, "-c", JUDGE, str(source), str(cache_dir), str(tmp_path / "judge")])
    try:
        wait_for(lambda: list(cache_dir.glob("builds/*/ext/*/lock")), BUILD_STARTS_S, "the judge's build to start")
    finally:
        judge.send_signal(signal.SIGKILL)
        judge.wait()
    [left] = cache_dir.glob("builds/*/ext/*/lock")
    wait_for(lambda: not build_lock.held(left), SANDBOX_DIES_S, "the killed judge's compile child to die")
    assert left.exists()  # what blocked every later build of the source until its deadline

    started = time.monotonic()
    outcome = precompile(add_relu_request(make_request, CPP_SOURCE, cache_dir), launcher)
    built(outcome)
    assert time.monotonic() - started < TEST_LIMITS.compile_s


@pytest.mark.slow
def test_a_build_past_its_wall_limit_is_a_timeout_and_is_discarded(
        make_request: RequestFactory, launcher: Launcher, tmp_path: Path) -> None:
    cache_dir = tmp_path / "cache"
    short = dataclasses.replace(TEST_LIMITS, compile_s=SHORT_COMPILE_S)
    outcome = precompile(add_relu_request(make_request, SLOW_CPP_SOURCE, cache_dir, short), launcher)
    assert outcome.failure is not None and outcome.failure.code == "timeout", outcome.failure
    assert f"ran past its {SHORT_COMPILE_S:.0f} s limit" in outcome.failure.message
    entry = outcome.extensions_dir.parent
    assert not outcome.extensions_dir.exists() and not (entry / "status.json").exists()
    assert [p.name for p in entry.iterdir()] == ["lock"]  # the judges' own lock, and nothing else

    built(precompile(add_relu_request(make_request, SLOW_CPP_SOURCE, cache_dir), launcher))


# Lowers its own CPU-time limit to a couple of seconds from now (allowed to any process), then spins: the
# real limit, reached in seconds instead of minutes.
SPINS_PAST_ITS_CPU_LIMIT = """
import resource

import torch.nn as nn

usage = resource.getrusage(resource.RUSAGE_SELF)
_, hard = resource.getrlimit(resource.RLIMIT_CPU)
resource.setrlimit(resource.RLIMIT_CPU, (int(usage.ru_utime + usage.ru_stime) + 2, hard))
while True:
    pass


class ModelNew(nn.Module):
    def forward(self, a, b):
        return (a + b).relu()
"""


def test_a_compile_step_past_its_cpu_limit_is_a_timeout_named_by_it(
        make_request: RequestFactory, launcher: Launcher, tmp_path: Path) -> None:
    request = add_relu_request(make_request, SPINS_PAST_ITS_CPU_LIMIT, tmp_path / "cache")
    outcome = precompile(request, launcher)
    limits = BuildLimits.of(build_target(request))
    assert outcome.failure is not None and outcome.failure.code == "timeout", outcome.failure
    assert f"used its {limits.cpu_s} s of CPU time" in outcome.failure.message
    assert not outcome.extensions_dir.exists()


def test_the_cpu_limit_lies_above_the_wall_limit() -> None:
    """So a single-threaded runaway, which uses at most its wall time in CPU time, is named by the wall limit."""
    problem = find_builtin("add_relu")
    assert problem is not None
    request = EvalRequest(problem=problem.spec(), submission="", cache_dir=Path("."), work_root=Path("."),
                          limits=TEST_LIMITS)
    limits = BuildLimits.of(build_target(request))
    assert limits.wall_s == TEST_LIMITS.compile_s  # a CPU build: no extra third for a lean CUDA build
    assert limits.cpu_s == TEST_LIMITS.compile_s + CPU_MARGIN_S
