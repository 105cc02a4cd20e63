"""The judge's handle on a running child: JSON-line requests with deadlines, capped output, group kill."""

from __future__ import annotations

import contextlib
import json
import os
import selectors
import signal
import subprocess
import threading
import time
from collections.abc import Mapping

# A reply larger than this is not something our child harness writes; refusing it bounds the judge's memory.
MAX_REPLY_BYTES = 16 * 1024 * 1024
# The wait for the end of a child's stderr once the child is gone. Its own end closes it at once; a process it
# left behind in its group may hold it open for as long as it runs, and two seconds bound that wait.
DRAIN_S = 2.0


class ChildGone(Exception):
    """The child exited (or closed its channel) before replying."""


class ChildTimeout(Exception):
    """The child did not reply before its deadline."""


class BadReply(Exception):
    """The child wrote something that is not a reply of our protocol."""


class CappedLog:
    """Keeps the head and the tail of a stream and counts what was dropped in between."""

    def __init__(self, head: int = 16 * 1024, tail: int = 48 * 1024) -> None:
        self._head = bytearray()
        self._tail = bytearray()
        self._head_cap, self._tail_cap = head, tail
        self.total = 0
        self._lock = threading.Lock()

    def feed(self, chunk: bytes) -> None:
        with self._lock:
            self.total += len(chunk)
            room = self._head_cap - len(self._head)
            if room > 0:
                self._head += chunk[:room]
                chunk = chunk[room:]
            self._tail += chunk
            if len(self._tail) > self._tail_cap:
                del self._tail[: len(self._tail) - self._tail_cap]

    def text(self) -> str:
        with self._lock:
            dropped = self.total - len(self._head) - len(self._tail)
            middle = f"\n... [{dropped} bytes of output dropped] ...\n" if dropped > 0 else ""
            return (bytes(self._head).decode(errors="replace") + middle + bytes(self._tail).decode(errors="replace"))


class ChildProcess:
    def __init__(self, proc: subprocess.Popen[bytes]) -> None:
        assert proc.stdin and proc.stdout and proc.stderr
        self.proc = proc
        self.log = CappedLog()
        self._buffer = bytearray()
        self._drain = threading.Thread(target=self._drain_stderr, daemon=True)
        self._drain.start()
        os.set_blocking(proc.stdout.fileno(), False)

    def _drain_stderr(self) -> None:
        assert self.proc.stderr
        fd = self.proc.stderr.fileno()
        while chunk := os.read(fd, 65536):
            self.log.feed(chunk)

    def send(self, message: Mapping[str, object]) -> None:
        assert self.proc.stdin
        try:
            self.proc.stdin.write(json.dumps(message).encode() + b"\n")
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError) as exc:
            raise ChildGone(self._ended()) from exc

    def receive(self, timeout: float) -> dict[str, object]:
        line = self._read_line(time.monotonic() + timeout)
        try:
            reply = json.loads(line)
        except (ValueError, RecursionError) as exc:  # RecursionError: nesting deeper than json can parse
            raise BadReply(f"unparseable reply: {line[:200]!r}") from exc
        if not isinstance(reply, dict):
            raise BadReply(f"reply is not an object: {line[:200]!r}")
        return reply

    def request(self, message: Mapping[str, object], timeout: float) -> dict[str, object]:
        self.send(message)
        return self.receive(timeout)

    def _read_line(self, deadline: float) -> bytes:
        assert self.proc.stdout
        fd = self.proc.stdout.fileno()
        with selectors.DefaultSelector() as sel:
            sel.register(fd, selectors.EVENT_READ)
            while b"\n" not in self._buffer:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise ChildTimeout()
                if not sel.select(remaining):
                    continue
                chunk = os.read(fd, 1 << 20)
                if not chunk:
                    raise ChildGone(self._ended())
                self._buffer += chunk
                if len(self._buffer) > MAX_REPLY_BYTES:
                    raise BadReply("reply larger than the protocol allows")
        line, _, rest = bytes(self._buffer).partition(b"\n")
        self._buffer = bytearray(rest)
        return line

    def kill(self) -> None:
        """Kill the child's whole process group and reap it."""
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self._drain.join(timeout=DRAIN_S)
        for stream in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            # A request the child was gone before reading may still wait in stdin's buffer: closing flushes it
            # into a pipe no one reads (BrokenPipeError), and closes the pipe all the same.
            with contextlib.suppress(OSError):
                if stream:
                    stream.close()

    def _ended(self) -> str:
        """How the gone child ended, once what it wrote to stderr has been read to the end: the caller reports
        its log next (why a sandbox refused to start it, a crash's traceback), which the thread draining stderr
        may still be reading on a busy host."""
        description = self.exit_description()
        self._drain.join(timeout=DRAIN_S)
        return description

    def exit_description(self) -> str:
        """Say how the child ended, waiting briefly for it to finish dying."""
        try:
            code = self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            return "the child closed its channel but is still running"
        if code < 0:
            try:
                name = signal.Signals(-code).name
            except ValueError:
                name = f"signal {-code}"
            return f"the process was killed by {name}"
        return f"the process exited with status {code}"
