"""Work dirs removed off the judge's path (host/removals.py)."""

from __future__ import annotations

import threading
from pathlib import Path

from kernelgrade.evaluator.host.removals import Removals


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
