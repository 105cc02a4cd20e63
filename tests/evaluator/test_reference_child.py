"""The reference is timed in a run child of its own, as the candidate is in its child, so that whatever the judge's
process is doing meanwhile (here a thread running one long call after another, as another judge's CPU work does)
reaches neither side. Timed in the judge's thread, KernelBench's level 3 networks graded against themselves came
out at 4x-39x on a GPU host with four judges in one process; that host's cause is not reproduced on a CPU, so
this test checks where the reference was timed and that a reference against itself stays at about 1x."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from kernelgrade.evaluator import EvalRequest, SubprocessLauncher, TimingParams, TrialPlan, Verdict, Warm, evaluate
from kernelgrade.evaluator.host.reference_cache import References
from kernelgrade.evaluator.host.run_children import RunChildren
from kernelgrade.problems.loader import load_problem_source

# 800 tiny ops a call, about 5 ms: its time is host dispatch, as a small-batch network's is.
SOURCE = '''
import torch
import torch.nn as nn

KERNELGRADE = {"device": "cpu", "precision": "fp32", "suite": "cpu", "level": 3}


class Model(nn.Module):
    def forward(self, x):
        for _ in range(400):
            x = x * 1.0001 + 0.0001
        return x


def get_inputs():
    return [torch.randn(64)]


def get_init_inputs():
    return []
'''
PROBLEM = load_problem_source(SOURCE, "dispatch_bound").spec()
TIMING = TimingParams(warmup_ms=5.0, min_reps=20, max_reps=200, max_device_ms=300.0, max_wall_ms=3000.0,
                      input_sets=2, reference_check_reps=0)
# A reference and a candidate timed alike differ by host noise only, which on a busy 2-core host stays well inside
# 2x either way.
BAND = (0.5, 2.0)


@contextmanager
def lock_held_by_another_thread() -> Iterator[None]:
    """A thread of this process that runs one long call after another (20 ms each here), holding Python's lock
    through each, as another judge's float64 oracle or fingerprints on the CPU do."""
    stop = threading.Event()

    def spin() -> None:
        while not stop.is_set():
            sum(range(10**6))

    thread = threading.Thread(target=spin, daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()


def test_a_busy_judge_process_leaves_a_reference_against_itself_at_about_1x(tmp_path: Path) -> None:
    request = EvalRequest(problem=PROBLEM, submission=SOURCE.replace("class Model", "class ModelNew"),
                          cache_dir=tmp_path / "cache", work_root=tmp_path / "work",
                          trials=TrialPlan(public_trials=1, secret_trials=1), timing=TIMING)
    warm = Warm(RunChildren(SubprocessLauncher(), tmp_path / "work", 0), References())
    try:
        with lock_held_by_another_thread():
            result = evaluate(request, warm=warm)
    finally:
        warm.close()
    assert result.verdict is Verdict.CORRECT, result.failure
    assert result.speedup is not None and BAND[0] <= result.speedup <= BAND[1], result.speedup
    assert result.method is not None and "in a run child of its own" in result.method.reference_placement
