"""Work that another thread of the test process keeps doing while a block runs."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager


@contextmanager
def kept_running(work: Callable[[], object]) -> Iterator[None]:
    """`work` called over and over by a daemon thread until the block ends."""
    stop = threading.Event()

    def loop() -> None:
        while not stop.is_set():
            work()

    thread = threading.Thread(target=loop, daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()
