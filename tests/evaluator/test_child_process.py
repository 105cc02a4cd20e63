"""The judge's handle on a child: what a child that is gone wrote to stderr is all in its log when the handle
says it is gone, and a gone child's handle closes cleanly."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from kernelgrade.evaluator.sandbox import child_process
from kernelgrade.evaluator.sandbox.child_process import ChildGone, ChildProcess

# Writes why it cannot go on to stderr and ends without a reply, as a sandbox that refuses to start does.
REFUSING = "import sys; sys.stderr.write('setting up uid map: Permission denied\\n'); sys.stderr.flush()"


def _started(code: str) -> ChildProcess:
    return ChildProcess(subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE,
                                         stdout=subprocess.PIPE, stderr=subprocess.PIPE))


@pytest.fixture
def slow_drain(monkeypatch: pytest.MonkeyPatch) -> None:
    """The thread draining stderr lags behind, as on a host whose cores are all busy."""
    feed = child_process.CappedLog.feed

    def lagging(self: child_process.CappedLog, chunk: bytes) -> None:
        time.sleep(0.5)
        feed(self, chunk)

    monkeypatch.setattr(child_process.CappedLog, "feed", lagging)


@pytest.mark.usefixtures("slow_drain")
def test_a_child_gone_before_replying_has_its_whole_stderr_logged() -> None:
    child = _started(REFUSING)
    try:
        with pytest.raises(ChildGone, match="exited with status 0"):
            child.receive(30)
        assert "Permission denied" in child.log.text()
    finally:
        child.kill()


@pytest.mark.usefixtures("slow_drain")
def test_a_child_gone_before_a_request_has_its_whole_stderr_logged_and_is_killed_without_an_error() -> None:
    child = _started(REFUSING + "; sys.stdin.close(); sys.stdout.close()")
    child.proc.wait(timeout=30)
    with pytest.raises(ChildGone):
        child.send({"op": "ready"})
    assert "Permission denied" in child.log.text()
    child.kill()  # the request still in stdin's buffer goes nowhere, without an error
