"""The lock of a GPU its judges share: evaluations hold it together, a measurement alone; another judge is another
process here, holding the file as a judge's grading process would."""

from __future__ import annotations

import fcntl
import os
import threading
import time
from pathlib import Path

import pytest

from kernelgrade.evaluator.host import host_lock
from kernelgrade.evaluator.host.device_lock import DeviceLock, device_lock_path
from kernelgrade.evaluator.host.run_children import RunChildren
from kernelgrade.evaluator.sandbox.launcher import SubprocessLauncher
from tests.evaluator.test_host_lock import HOLD_S, held_elsewhere, waits_for_release


def free_for(path: Path, mode: int) -> bool:
    """Whether another judge could take the lock in `mode` now."""
    fd = os.open(path, os.O_RDONLY | os.O_CREAT, 0o666)
    try:
        fcntl.flock(fd, mode | fcntl.LOCK_NB)
        return True
    except BlockingIOError:
        return False
    finally:
        os.close(fd)


def test_judges_use_the_device_together(tmp_path: Path) -> None:
    lock = DeviceLock(tmp_path / "gpu.lock")
    with held_elsewhere(lock.path, "LOCK_SH"):
        started = time.monotonic()
        with lock.using():
            assert time.monotonic() - started < HOLD_S / 2


def test_a_measurement_waits_for_the_other_judges_device_work(tmp_path: Path) -> None:
    lock = DeviceLock(tmp_path / "gpu.lock")
    waits_for_release(lock.path, "LOCK_SH", lock.alone)


def test_device_work_waits_for_another_judges_measurement(tmp_path: Path) -> None:
    lock = DeviceLock(tmp_path / "gpu.lock")
    waits_for_release(lock.path, "LOCK_EX", lock.using)


def test_a_measurement_lets_go_of_its_judges_own_hold_and_takes_it_back(tmp_path: Path) -> None:
    lock = DeviceLock(tmp_path / "gpu.lock")
    with lock.using():
        assert free_for(lock.path, fcntl.LOCK_SH) and not free_for(lock.path, fcntl.LOCK_EX)
        with lock.alone():  # would wait forever for its own shared hold if it kept it
            assert not free_for(lock.path, fcntl.LOCK_SH)
        assert free_for(lock.path, fcntl.LOCK_SH) and not free_for(lock.path, fcntl.LOCK_EX)
        with lock.using():  # nested: the outer hold stands, and is not let go of by the inner one's end
            pass
        assert not free_for(lock.path, fcntl.LOCK_EX)
    assert free_for(lock.path, fcntl.LOCK_EX)


def test_a_measurement_outside_any_evaluation_holds_the_device_alone(tmp_path: Path) -> None:
    lock = DeviceLock(tmp_path / "gpu.lock")
    with lock.alone():
        assert not free_for(lock.path, fcntl.LOCK_SH)
    assert free_for(lock.path, fcntl.LOCK_EX)


def test_a_spare_is_not_held_up_by_a_measurement_waiting_for_its_judge(tmp_path: Path) -> None:
    """A judge holding the lock may wait for its spare: the spare must not queue behind a measurement that waits
    for that judge, at the gate. It does wait for a measurement under way."""
    lock = DeviceLock(tmp_path / "gpu.lock")
    with held_elsewhere(lock.lock.gate):  # another judge's measurement, waiting at the gate
        started = time.monotonic()
        with lock.beside():
            assert time.monotonic() - started < HOLD_S / 2
    waits_for_release(lock.path, "LOCK_EX", lock.beside)


def test_a_measurement_waiting_keeps_the_next_evaluation_out(tmp_path: Path) -> None:
    """Evaluations that overlap one another would otherwise hold the device for as long as jobs keep coming."""
    path = tmp_path / "gpu.lock"
    events: list[str] = []
    first_in = threading.Event()
    first, measuring, second = DeviceLock(path), DeviceLock(path), DeviceLock(path)

    def evaluate_first() -> None:
        with first.using():
            first_in.set()
            time.sleep(HOLD_S / 2)
            events.append("first evaluation's device work done")

    def measure() -> None:
        with measuring.alone():
            events.append("measured")

    threads = [threading.Thread(target=evaluate_first), threading.Thread(target=measure)]
    threads[0].start()
    assert first_in.wait(10)
    threads[1].start()
    time.sleep(HOLD_S / 4)  # the measurement now waits at the gate
    with second.using():
        events.append("second evaluation")
    for thread in threads:
        thread.join()
    assert events == ["first evaluation's device work done", "measured", "second evaluation"]


def test_a_gpu_judges_measurements_hold_its_device_lock_and_cpu_ones_do_not(tmp_path: Path,
                                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(host_lock, "WAIT_S", 5.0)  # one that waited would fail here, not hang
    lock = DeviceLock(tmp_path / "gpu.lock")
    children = RunChildren(SubprocessLauncher(), tmp_path / "work", spares=0, device_lock=lock)
    with held_elsewhere(lock.path, "LOCK_SH"):
        started = time.monotonic()
        with children.quiet(cpu=True), children.using(cpu=True):  # a CPU problem graded by a GPU judge
            assert time.monotonic() - started < HOLD_S / 2
            assert free_for(lock.path, fcntl.LOCK_SH)
    waits_for_release(lock.path, "LOCK_SH", children.quiet)
    waits_for_release(lock.path, "LOCK_EX", children.using)


def test_a_gpus_lock_is_named_for_the_gpu_beside_the_host_lock(tmp_path: Path) -> None:
    path = device_lock_path(tmp_path / "kernelgrade-cpu-measure.lock", "6f1f2c3e-aaaa-bbbb-cccc-0123456789ab")
    assert path == tmp_path / "kernelgrade-gpu-6f1f2c3e-aaaa-bbbb-cccc-0123456789ab.lock"
