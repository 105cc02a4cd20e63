"""The lock a host's judges share around CPU measurements, held by another process as a second worker would."""

from __future__ import annotations

import fcntl
import math
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import replace
from pathlib import Path

import pytest

from kernelgrade.evaluator import DeviceKind, precompile
from kernelgrade.evaluator.host import host_lock
from kernelgrade.evaluator.host.host_lock import HostLock
from kernelgrade.evaluator.host.run_children import ChildKind, RunChildren
from kernelgrade.evaluator.sandbox.launcher import ChildSpec, SubprocessLauncher
from kernelgrade.problems import find_builtin
from tests.conftest import RequestFactory
from tests.service.sources import CORRECT as ADD_RELU

CPU = ChildKind(None, "cpu", ())
HOLD_S = 1.0


@contextmanager
def held_elsewhere(path: Path, mode: str = "LOCK_EX") -> Iterator[None]:
    """Another process holds the lock until the block ends: alone as a measurement does (LOCK_EX), or shared
    as a build does (LOCK_SH)."""
    code = ("import fcntl, os, sys\n"
            f"fd = os.open({str(path)!r}, os.O_RDONLY | os.O_CREAT, 0o666)\n"
            f"fcntl.flock(fd, fcntl.{mode})\n"
            "print('held', flush=True)\n"
            "sys.stdin.read()\n")
    holder = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == b"held"
        yield
    finally:
        assert holder.stdin is not None and holder.stdout is not None
        holder.stdin.close()
        holder.wait(timeout=10)
        holder.stdout.close()


def released_later(path: Path, mode: str = "LOCK_EX") -> tuple[threading.Thread, list[float]]:
    """Holds the lock in another process for HOLD_S from now; the list gets the time it let go."""
    ready, released = threading.Event(), []

    def hold() -> None:
        with held_elsewhere(path, mode):
            ready.set()
            time.sleep(HOLD_S)
            released.append(time.monotonic())

    thread = threading.Thread(target=hold)
    thread.start()
    assert ready.wait(10)
    return thread, released


def waits_for_release(path: Path, mode: str, take: Callable[[], AbstractContextManager[object]]) -> None:
    """What `take()` enters while another process holds the lock (`mode`) is entered once that one lets go."""
    thread, released = released_later(path, mode)
    with take():
        taken = time.monotonic()
    thread.join()
    assert released and taken >= released[0] - 0.05


class CountingLauncher(SubprocessLauncher):
    def __init__(self) -> None:
        super().__init__()
        self.started = 0
        self.first_at = math.inf  # when the first child was started (time.monotonic())

    def popen(self, spec: ChildSpec) -> subprocess.Popen[bytes]:
        self.started += 1
        self.first_at = min(self.first_at, time.monotonic())
        return super().popen(spec)


def test_the_lock_waits_for_another_process_to_let_go(tmp_path: Path) -> None:
    path = tmp_path / "host.lock"
    waits_for_release(path, "LOCK_EX", HostLock(path).held)


def test_a_holder_that_never_lets_go_stops_nobody_for_long(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(host_lock, "WAIT_S", 0.2)
    path = tmp_path / "host.lock"
    with held_elsewhere(path):
        started = time.monotonic()
        with HostLock(path).held():
            waited = time.monotonic() - started
    assert 0.2 <= waited < HOLD_S


def test_builds_hold_the_lock_together_and_a_measurement_waits_for_them(tmp_path: Path) -> None:
    path = tmp_path / "host.lock"
    with held_elsewhere(path, "LOCK_SH"):
        started = time.monotonic()
        with HostLock(path).shared():
            assert time.monotonic() - started < HOLD_S / 2
    waits_for_release(path, "LOCK_SH", HostLock(path).held)


def test_a_build_waits_for_a_measurement(tmp_path: Path) -> None:
    path = tmp_path / "host.lock"
    waits_for_release(path, "LOCK_EX", HostLock(path).shared)


def test_a_waiting_measurement_keeps_new_builds_out(tmp_path: Path) -> None:
    """Builds that overlap one another would otherwise hold the lock shared for as long as builds keep coming."""
    path = tmp_path / "host.lock"
    events: list[tuple[str, float]] = []

    def measure() -> None:
        with HostLock(path).held():
            events.append(("measured", time.monotonic()))
            time.sleep(0.3)
            events.append(("measurement done", time.monotonic()))

    thread, released = released_later(path, "LOCK_SH")  # a build already running
    measurement = threading.Thread(target=measure)
    measurement.start()
    time.sleep(HOLD_S / 4)  # the measurement now waits in the gate
    with HostLock(path).shared():  # the next build
        events.append(("built", time.monotonic()))
    measurement.join()
    thread.join()
    assert [name for name, _ in events] == ["measured", "measurement done", "built"]
    assert events[0][1] >= released[0] - 0.05


def test_a_build_does_not_start_while_a_judge_of_the_host_measures(tmp_path: Path,
                                                                   make_request: RequestFactory) -> None:
    path = tmp_path / "host.lock"
    # A source of its own, so that the compile cache the session shares cannot already hold its build.
    source = f"# {tmp_path}\n" + ADD_RELU
    request = make_request(replace(find_builtin("add_relu").spec(), device=DeviceKind.CPU), source)
    launcher = CountingLauncher()
    thread, released = released_later(path)
    outcome = precompile(request, launcher, host_lock=path)
    thread.join()
    assert outcome.failure is None and not outcome.cache_hit
    assert launcher.started == 1 and launcher.first_at >= released[0] - 0.05


@pytest.mark.parametrize("holder", ["LOCK_SH", "LOCK_EX"])
def test_a_measurement_that_can_wait_takes_the_lock_only_when_it_is_free(tmp_path: Path, holder: str) -> None:
    lock = HostLock(tmp_path / "host.lock")
    with held_elsewhere(lock.path, holder):
        started = time.monotonic()
        with lock.held_if_free() as free:
            assert not free and time.monotonic() - started < HOLD_S
    # A measurement waiting at the gate keeps it out too.
    with held_elsewhere(lock.gate), lock.held_if_free() as free:
        assert not free
    with lock.held_if_free() as free:
        assert free
        other = os.open(lock.path, os.O_RDONLY)  # a build's open of the file: kept out while the lock is held
        try:
            with pytest.raises(BlockingIOError):
                fcntl.flock(other, fcntl.LOCK_SH | fcntl.LOCK_NB)
        finally:
            os.close(other)


def test_a_lock_file_that_cannot_be_opened_stops_nobody(tmp_path: Path) -> None:
    lock = HostLock(tmp_path / "no such dir" / "host.lock")
    with lock.shared(), lock.held():
        pass


def test_only_cpu_measurements_take_the_host_lock(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(host_lock, "WAIT_S", 5.0)  # a quiet() that waited would fail here, not hang
    path = tmp_path / "host.lock"
    children = RunChildren(SubprocessLauncher(), tmp_path / "work", spares=0, host_lock=HostLock(path))
    with held_elsewhere(path):
        started = time.monotonic()
        with children.quiet():  # a GPU measurement: other processes' CPU work does not reach the device
            assert time.monotonic() - started < HOLD_S / 2
    waits_for_release(path, "LOCK_EX", lambda: children.quiet(cpu=True))


def test_a_cpu_spare_starts_only_while_no_judge_of_the_host_measures(tmp_path: Path) -> None:
    path = tmp_path / "host.lock"
    launcher = CountingLauncher()
    children = RunChildren(launcher, tmp_path / "work", spares=1, host_lock=HostLock(path))
    try:
        with held_elsewhere(path):
            children.take(CPU).close()  # started on demand; asks for a spare, which must wait
            time.sleep(HOLD_S / 2)
            assert launcher.started == 1
        deadline = time.monotonic() + 60
        while children.ready(CPU) == 0:
            assert time.monotonic() < deadline, "the spare never started once the lock was free"
            time.sleep(0.1)
        assert launcher.started == 2
    finally:
        children.close()
