"""Where a judge's threads spend their time: every few milliseconds, the stack of each thread of interest, summed by
function, both where the function is anywhere on the stack (inclusive) and where it is the frame running (own,
by line). The judge's side only: its run children are processes of their own.

    with ThreadSamples() as samples:
        ...
    print("\\n".join(samples.report()))
"""

from __future__ import annotations

import sys
import threading
from collections import Counter
from pathlib import PurePath
from types import FrameType, TracebackType

# The judge's threads that do an evaluation's work: the main one, and the pools that make trials and timing sets,
# load the reference's child ahead and remove work dirs. Spare starters and output drains mostly wait.
JUDGE_THREADS = ("MainThread", "trial-inputs", "timing-input", "reference-ahead", "removals")
# Often enough to see a stage of a tenth of a second; sampling costs the judge a few percent of a core.
INTERVAL_S = 0.005


class ThreadSamples:
    def __init__(self, threads: tuple[str, ...] = JUDGE_THREADS, interval_s: float = INTERVAL_S) -> None:
        self.threads, self.interval_s = threads, interval_s
        self.inclusive: Counter[tuple[str, str]] = Counter()
        self.own: Counter[tuple[str, str]] = Counter()
        self._stop = threading.Event()
        self._sampler = threading.Thread(target=self._run, name="thread-samples", daemon=True)

    def __enter__(self) -> ThreadSamples:
        self._sampler.start()
        return self

    def __exit__(self, _type: type[BaseException] | None, _value: BaseException | None,
                 _tb: TracebackType | None) -> None:
        self._stop.set()
        self._sampler.join()

    def report(self, top: int = 40) -> list[str]:
        """The `top` functions by inclusive seconds, then by own seconds, a line each."""
        lines = ["inclusive s, thread, function"]
        lines += [f"{n * self.interval_s:8.2f}  {t:<16} {f}" for (t, f), n in self.inclusive.most_common(top)]
        lines.append("own s, thread, function:line")
        lines += [f"{n * self.interval_s:8.2f}  {t:<16} {f}" for (t, f), n in self.own.most_common(top)]
        return lines

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            names = {t.ident: t.name for t in threading.enumerate()}
            for ident, frame in sys._current_frames().items():
                name = names.get(ident, "")
                if name.startswith(self.threads):
                    self._count(name.split("_")[0], frame)

    def _count(self, thread: str, frame: FrameType | None) -> None:
        if frame is not None:
            self.own[(thread, f"{_function(frame)}:{frame.f_lineno}")] += 1
        seen: set[str] = set()
        while frame is not None:
            function = _function(frame)
            if function not in seen:
                seen.add(function)
                self.inclusive[(thread, function)] += 1
            frame = frame.f_back


def _function(frame: FrameType) -> str:
    """`package/module.py:function`, the file's path from its package down."""
    path = PurePath(frame.f_code.co_filename)
    for root in ("kernelgrade", "torch", "bench"):
        if root in path.parts:
            path = PurePath(*path.parts[path.parts.index(root):])
            break
    else:
        path = PurePath(path.name)
    return f"{path}:{frame.f_code.co_name}"
