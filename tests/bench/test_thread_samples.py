"""bench/thread_samples.py: the judge's threads sampled, by function, inclusive and own."""

from __future__ import annotations

import importlib
import threading
import time
from pathlib import Path
from types import ModuleType

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"


@pytest.fixture
def thread_samples(monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    monkeypatch.syspath_prepend(str(BENCH))
    return importlib.import_module("thread_samples")


def busy(seconds: float) -> None:
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


def test_a_chosen_thread_s_work_is_counted_by_function_and_other_threads_are_not(thread_samples: ModuleType) -> None:
    judged = threading.Thread(target=busy, args=(0.4,), name="trial-inputs_0")
    other = threading.Thread(target=busy, args=(0.4,), name="drain")
    with thread_samples.ThreadSamples(threads=("trial-inputs",)) as samples:
        judged.start()
        other.start()
        judged.join()
        other.join()
    busy_s = sum(n for (thread, function), n in samples.inclusive.items()
                 if thread == "trial-inputs" and function.endswith("test_thread_samples.py:busy")) * samples.interval_s
    assert busy_s > 0  # sampled at least once: 5 ms apart, when the GIL lets the sampler run
    assert {thread for thread, _ in samples.inclusive} == {"trial-inputs"}
    assert any("test_thread_samples.py:busy:" in function for _, function in samples.own)
    report = samples.report(top=5)
    assert report[0].startswith("inclusive") and any("busy" in line for line in report[1:6])
