"""The judge's watch over held streams: the release of last resort for a rep whose forward() waits for the
device (wire/hold_page.py says why it must be another thread, and for a run child another process).

While a page is watched, a thread reads it every POLL_S and lets go a rep held past its deadline. The judge
watches a run child's page while the child warms up and times (host/session.py), and its own page while it
times the reference (judge/timing_stage.py).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

from kernelgrade.evaluator.wire.hold_page import HoldPage

# A late rep is let go within its deadline plus this; a read of a few words 100 times a second, only while
# something is timed, costs nothing measurable.
POLL_S = 0.01


class HoldWatch:
    def __init__(self) -> None:
        self._pages: list[HoldPage] = []
        self._changed = threading.Condition()
        self._thread: threading.Thread | None = None
        self.released_late = 0

    @contextmanager
    def watching(self, page: HoldPage | None) -> Iterator[None]:
        if page is None:
            yield
            return
        with self._changed:
            self._pages.append(page)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="stream-hold-watch", daemon=True)
                self._thread.start()
            self._changed.notify()
        try:
            yield
        finally:
            with self._changed:
                self._pages.remove(page)

    def _run(self) -> None:
        while True:
            with self._changed:
                self._changed.wait_for(lambda: bool(self._pages))
                pages = list(self._pages)
            now = time.monotonic_ns()
            self.released_late += sum(page.release_if_late(now) for page in pages)
            time.sleep(POLL_S)


_watch = HoldWatch()
_own: HoldPage | None = None
_own_lock = threading.Lock()


def watch() -> HoldWatch:
    """The one watch of this judge process."""
    return _watch


def own_page() -> HoldPage:
    """The page the judge's own timing loop (the reference) holds its stream on."""
    global _own
    with _own_lock:
        if _own is None:
            _own = HoldPage.private()
        return _own
