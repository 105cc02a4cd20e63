"""The hold page: the judge's watch lets go a rep another process left held past its deadline, and a write
never takes back a newer release."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from kernelgrade.evaluator.host.hold_watch import HoldWatch
from kernelgrade.evaluator.wire.hold_page import PAGE_BYTES, HoldPage


def test_a_late_rep_is_let_go_once_and_a_release_only_ever_grows() -> None:
    page = HoldPage.private()
    page.arm(1, time.monotonic_ns() + 10**9)
    assert not page.release_if_late(time.monotonic_ns())  # before its deadline
    assert page.release_if_late(time.monotonic_ns() + 2 * 10**9) and page.released == 1
    assert not page.release(1), "the watch let it go, not the timing loop"
    page.arm(2, 0)
    assert page.release(2) and not page.release_if_late(time.monotonic_ns())
    page.arm(1, 0)  # a stale arming: the word stays at the newer release
    assert not page.release_if_late(time.monotonic_ns()) and page.released == 2


def test_the_watch_releases_a_page_that_another_process_holds(tmp_path: Path) -> None:
    """The child side maps the judge's file, arms a rep with a deadline already past and waits, holding its
    GIL-free sleep, for the word: the judge's watch, in this process, writes it."""
    path = tmp_path / "page"
    page = HoldPage.create(path)
    code = ("import sys, time\n"
            "from pathlib import Path\n"
            "from kernelgrade.evaluator.wire.hold_page import HoldPage\n"
            "page = HoldPage.open(Path(sys.argv[1]))\n"
            "page.arm(1, time.monotonic_ns())\n"
            "print('armed', flush=True)\n"
            "deadline = time.monotonic() + 30\n"
            "while page.released < 1 and time.monotonic() < deadline:\n"
            "    time.sleep(0.001)\n"
            "print('released' if page.released == 1 else 'held', page.release(1), flush=True)\n")
    watch = HoldWatch()
    with watch.watching(page):
        child = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True, timeout=60,
                               check=True)
    assert child.stdout.split() == ["armed", "released", "False"], child.stderr
    assert watch.released_late == 1


def test_the_judge_makes_its_page_fresh_and_the_child_opens_only_a_page(tmp_path: Path) -> None:
    (tmp_path / "planted").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(FileExistsError):
        HoldPage.create(tmp_path / "planted")
    assert HoldPage.open(tmp_path / "missing") is None
    (tmp_path / "short").write_bytes(b"\0" * (PAGE_BYTES // 2))
    assert HoldPage.open(tmp_path / "short") is None
