"""Shared test fixtures: a compile cache for the whole session and fast-but-real grading parameters."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest
import torch

from kernelgrade.evaluator import EvalRequest, Limits, ProblemSpec, TimingParams, TrialPlan
from kernelgrade.evaluator.host import header_pch

# Small enough for a 2-core CI machine, large enough that the adaptive loop and the statistics are exercised.
FAST_TIMING = TimingParams(warmup_calls=3, warmup_ms=5.0, min_reps=10, max_reps=200, max_device_ms=300.0,
                           max_wall_ms=1500.0, input_sets=2, flush_bytes=16 * 1024 * 1024)
# Building a C++ extension on 2 cores takes about 35 s. A call's limit leaves room for a first call that imports
# torch's compiler stack (a dispatch mode's first operation does: 2 s on an idle 2-core host, past 10 s on a
# busy CI one); the cases that hang set a shorter one of their own, so that they are noticed quickly.
TEST_LIMITS = Limits(compile_s=240.0, load_s=60.0, call_s=30.0, timing_s=60.0)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if torch.cuda.is_available():
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU (run on the GPU host)")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def compile_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh cache per session, or a shared one (KERNELGRADE_TEST_COMPILE_CACHE) so that a GPU host's run
    reuses the builds of bench/gpu_acceptance.py instead of compiling the seeds again (~50 s each)."""
    shared = os.environ.get("KERNELGRADE_TEST_COMPILE_CACHE")
    cache = Path(shared) if shared else tmp_path_factory.mktemp("compile-cache")
    # The precompiled header the service's CPU builds use, built once for the session (about 30 s here) so
    # that each of the suite's C++ builds takes about 8 s instead of 20; where none can be built (no GCC),
    # builds go without, as the service's do.
    header_pch.build(cache, header_pch.COMMON_VARIANT)
    return cache


RequestFactory = Callable[..., EvalRequest]


@pytest.fixture
def make_request(compile_cache: Path, tmp_path: Path) -> RequestFactory:
    def factory(problem: ProblemSpec, submission: str, **overrides: object) -> EvalRequest:
        fields: dict[str, object] = {
            "problem": problem, "submission": submission, "cache_dir": compile_cache,
            "work_root": tmp_path / "work", "timing": FAST_TIMING, "limits": TEST_LIMITS,
            "trials": TrialPlan(public_trials=3, secret_trials=2, secret="test-secret"), "compile_jobs": 2,
        }
        fields.update(overrides)
        # The session cache's header, as the service uses one; a test's own cache goes without (it would build
        # a header of its own in the background: a build's time and 0.8 GB).
        fields.setdefault("precompiled_header", fields["cache_dir"] == compile_cache)
        return EvalRequest(**fields)  # type: ignore[arg-type]

    return factory
