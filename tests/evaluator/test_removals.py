"""Work dirs removed off the judge's path (host/removals.py)."""

from __future__ import annotations

import os
import threading
from pathlib import Path

from kernelgrade.evaluator.host.removals import Removals
from kernelgrade.evaluator.wire.shared_region import SharedRegion


def a_dir(root: Path, name: str) -> Path:
    path = root / name
    (path / "inner").mkdir(parents=True)
    (path / "inner" / "timing_0.kgt").write_bytes(b"x" * 4096)
    return path


def test_the_dirs_handed_over_are_gone_once_waited_for(tmp_path: Path) -> None:
    removals = Removals()
    dirs = [a_dir(tmp_path, f"job-{k}") for k in range(6)]
    for path in [*dirs, tmp_path / "never-made"]:
        removals.remove(path)
    removals.wait()
    assert not any(path.exists() for path in dirs)


def test_a_judge_handing_over_more_than_may_wait_waits_for_the_oldest(tmp_path: Path) -> None:
    removals = Removals(pending_most=1)
    held = threading.Event()
    removals._pool.submit(held.wait)  # the thread is busy: what is handed over waits
    removals.remove(a_dir(tmp_path, "first"))
    second = threading.Thread(target=removals.remove, args=(a_dir(tmp_path, "second"),))
    second.start()
    second.join(timeout=0.5)
    assert second.is_alive()  # waits for the first
    held.set()
    second.join(timeout=10)
    assert not second.is_alive()
    removals.wait()
    assert not (tmp_path / "first").exists() and not (tmp_path / "second").exists()


def test_a_region_handed_over_is_closed_once_waited_for_and_counts_as_waiting() -> None:
    region = SharedRegion.create(pin=False)
    region.reserve(1 << 20).release()
    removals = Removals(pending_most=1)
    held = threading.Event()
    removals._pool.submit(held.wait)
    removals.close(region)
    assert _is_region(region.fd)  # not yet: the thread is busy
    later = threading.Thread(target=removals.remove, args=(Path("/nonexistent/kernelgrade-test"),))
    later.start()
    later.join(timeout=0.5)
    assert later.is_alive()  # the region takes the one slot
    held.set()
    later.join(timeout=10)
    removals.wait()
    assert not _is_region(region.fd)


def _is_region(fd: int) -> bool:
    """Whether `fd` is open on a region (its number may name another file once closed)."""
    try:
        return "kernelgrade-outputs" in os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        return False
