"""The build directory lock (wire/build_lock.py), held by real processes: a lock whose owner died is removed
or taken over, a live owner's lock is waited on, and processes that contend take turns."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from kernelgrade.evaluator.wire import build_lock

# A Python process started on this 2-core machine, shared with other work, answers within seconds.
OWNER_START_S = 60.0
# Long enough that a waiter returning before it is surely not a scheduling accident.
HOLD_S = 1.5

# The module by its file, stdlib only: the package's __init__ would import torch, seconds per process here.
LOAD_MODULE = f"""
import importlib.util
spec = importlib.util.spec_from_file_location("build_lock", {build_lock.__file__!r})
build_lock = importlib.util.module_from_spec(spec)
spec.loader.exec_module(build_lock)
"""
OWNER = LOAD_MODULE + """
import sys, time
from pathlib import Path
path = Path(sys.argv[1])
fd = build_lock.acquire(path)
print("held", flush=True)
line = sys.stdin.readline()  # hold until told (or killed)
time.sleep(float(line or 0))
build_lock.release(path, fd)
"""


class Owner:
    """Another process holding the lock at `path` until told to let go, or killed."""

    def __init__(self, path: Path) -> None:
        self.process = subprocess.Popen([sys.executable, "-c", OWNER, str(path)], stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, text=True)
        assert self.process.stdout is not None
        ready = threading.Timer(OWNER_START_S, self.process.kill)
        ready.start()
        line = self.process.stdout.readline()
        ready.cancel()
        assert line.strip() == "held", "the owner process did not take the lock"

    def release_after(self, seconds: float) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(f"{seconds}\n")
        self.process.stdin.flush()

    def kill(self) -> None:
        self.process.send_signal(signal.SIGKILL)
        self.process.wait()

    def close(self) -> None:
        if self.process.poll() is None:
            self.kill()


@pytest.fixture
def lock(tmp_path: Path) -> Path:
    build_dir = tmp_path / "ext" / "kg_ext"
    build_dir.mkdir(parents=True)
    return build_dir / build_lock.LOCK_NAME


@pytest.fixture
def owner(lock: Path) -> Iterator[Owner]:
    held = Owner(lock)
    yield held
    held.close()


def test_a_lock_whose_owner_died_is_removed(lock: Path, owner: Owner) -> None:
    owner.kill()
    assert lock.exists() and not build_lock.held(lock)  # left behind, as a killed build leaves torch's
    assert build_lock.remove_if_stale(lock)
    assert not lock.exists()


def test_a_lock_whose_owner_died_is_taken_over(lock: Path, owner: Owner) -> None:
    owner.kill()
    fd = build_lock.acquire(lock)
    try:
        assert build_lock.held(lock) and os.fstat(fd).st_ino == lock.stat().st_ino
    finally:
        build_lock.release(lock, fd)
    assert not lock.exists()


def test_a_live_owners_lock_is_left_alone(lock: Path, owner: Owner) -> None:
    assert build_lock.held(lock)
    assert not build_lock.remove_if_stale(lock)
    assert lock.exists() and build_lock.held(lock)


def test_a_live_owners_lock_is_waited_on(lock: Path, owner: Owner) -> None:
    started = time.monotonic()
    owner.release_after(HOLD_S)
    fd = build_lock.acquire(lock)
    waited = time.monotonic() - started
    try:
        assert owner.process.wait(OWNER_START_S) == 0  # it released the lock itself: nobody took it from it
        assert waited >= HOLD_S and build_lock.held(lock)
    finally:
        build_lock.release(lock, fd)


def test_an_owner_that_dies_while_waited_on_is_taken_over(lock: Path, owner: Owner) -> None:
    killer = threading.Timer(HOLD_S, owner.kill)
    killer.start()
    started = time.monotonic()
    fd = build_lock.acquire(lock)
    waited = time.monotonic() - started
    try:
        killer.join()
        assert waited >= HOLD_S and owner.process.returncode == -signal.SIGKILL
        assert os.fstat(fd).st_ino == lock.stat().st_ino
    finally:
        build_lock.release(lock, fd)


def test_torchs_own_lock_file_reads_as_stale(lock: Path) -> None:
    """What torch's FileBaton leaves (an empty file nobody holds), hence the harness version that keeps entries
    of the earlier compile child apart."""
    lock.touch()
    assert not build_lock.held(lock) and build_lock.remove_if_stale(lock)


def test_processes_that_contend_take_turns(tmp_path: Path, lock: Path) -> None:
    journal = tmp_path / "journal"
    worker = LOAD_MODULE + f"""
import os, sys, time
from pathlib import Path
path = Path({str(lock)!r})
for _ in range(5):
    fd = build_lock.acquire(path)
    with open({str(journal)!r}, "a") as out:
        out.write(f"in {{os.getpid()}}\\n")
    time.sleep(0.02)
    with open({str(journal)!r}, "a") as out:
        out.write(f"out {{os.getpid()}}\\n")
    build_lock.release(path, fd)
"""
    workers = [subprocess.Popen([sys.executable, "-c", worker]) for _ in range(3)]
    assert [w.wait(OWNER_START_S) for w in workers] == [0, 0, 0]
    lines = journal.read_text().split("\n")[:-1]
    assert len(lines) == 30
    pairs = [(lines[i], lines[i + 1]) for i in range(0, len(lines), 2)]
    assert all(a.split()[0] == "in" and b == "out " + a.split()[1] for a, b in pairs), lines
    assert not lock.exists() and list(lock.parent.iterdir()) == []  # no lock and no temporary name left
