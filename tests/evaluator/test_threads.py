"""The child's wait for the threads that appeared since load to go quiet (evaluator/integrity/threads.py)."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator

import pytest

from kernelgrade.evaluator.integrity.threads import clocks, thread_ids, wait_quiet
from tests.evaluator.background import kept_running

PARTS = 20


def _spin(seconds: float) -> None:
    end = time.thread_time() + seconds
    while time.thread_time() < end:
        pass


@pytest.fixture
def busy_cpu() -> Iterator[int]:
    """One CPU kept busy by a process at normal priority: a thread moved there at the lowest priority waits
    for a CPU most of the time, like a submission's thread on a loaded host."""
    cpu = min(os.sched_getaffinity(0))
    hog = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        os.sched_setaffinity(hog.pid, {cpu})
        yield cpu
    finally:
        hog.kill()
        hog.wait()


def test_waits_for_a_starved_thread_to_finish_writing(busy_cpu: int) -> None:
    known = thread_ids()
    written: list[int] = []
    ready = threading.Event()

    def writer() -> None:
        tid = threading.get_native_id()
        os.sched_setaffinity(tid, {busy_cpu})
        os.setpriority(os.PRIO_PROCESS, tid, 19)
        ready.set()
        for part in range(PARTS):
            _spin(0.001)
            written.append(part)

    thread = threading.Thread(target=writer, daemon=True)
    thread.start()
    ready.wait()
    assert wait_quiet(known, budget_s=30.0)
    assert written == list(range(PARTS))
    thread.join()


def test_threads_known_at_load_are_not_waited_for() -> None:
    with kept_running(lambda: _spin(0.001)):
        started = time.perf_counter()
        assert wait_quiet(thread_ids(), budget_s=5.0)
        assert time.perf_counter() - started < 0.5


def test_a_thread_that_never_rests_ends_the_wait_at_the_budget() -> None:
    known = thread_ids()
    with kept_running(lambda: _spin(0.001)):
        started = time.perf_counter()
        assert not wait_quiet(known, budget_s=0.2)
        assert 0.2 <= time.perf_counter() - started < 2.0


def test_a_sleeping_thread_is_quiet_and_an_ended_one_is_left_out() -> None:
    known = thread_ids()
    stop = threading.Event()
    sleeper = threading.Thread(target=stop.wait, daemon=True)
    sleeper.start()
    tid = str(sleeper.native_id)
    assert wait_quiet(known, budget_s=5.0)
    assert not clocks([tid])[tid].runnable
    stop.set()
    sleeper.join()
    deadline = time.monotonic() + 5.0  # join() returns just before the thread's own exit from the kernel
    while tid in thread_ids() and time.monotonic() < deadline:
        time.sleep(0.001)
    assert tid not in thread_ids() and clocks([tid]) == {}
