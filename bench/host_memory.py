"""The host's memory while a stream is graded: the least memory available, the most waiting to be written back,
and how long tasks stalled for memory (the kernel's pressure stall information, PSI).

In a mixed stream on an H200 host (128 GiB), 94_MSELoss took 35 s of device time in one pass and 23 s in the
pass before it; `vmstat` beside the run showed the host down to 2 GiB free then, writing back 1.9 GB/s (timing
sets are files, and the judge's pinned buffers cannot be reclaimed). Printed beside each pass, these figures tell
a pass slowed by its host from one slowed by the change measured.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

MEMINFO = Path("/proc/meminfo")
PRESSURE = Path("/proc/pressure/memory")
# A reading a second: the memory of a 6 GiB problem's timing sets comes and goes within a few seconds.
SAMPLE_S = 1.0
_GIB = 1024**3


@dataclass(frozen=True)
class Reading:
    available: int  # bytes
    dirty: int
    writeback: int
    stall_some_us: int | None  # cumulative: some task stalled for memory; None without PSI
    stall_full_us: int | None  # cumulative: every runnable task stalled


@dataclass(frozen=True)
class HostMemory:
    """A pass's readings, summed up."""

    least_available_gib: float
    most_dirty_gib: float
    most_writeback_gib: float
    stall_some_s: float | None
    stall_full_s: float | None


def read(meminfo: Path = MEMINFO, pressure: Path = PRESSURE) -> Reading:
    fields = _meminfo(meminfo.read_text())
    some, full = _stalls(pressure)
    return Reading(fields.get("MemAvailable", 0), fields.get("Dirty", 0), fields.get("Writeback", 0), some, full)


def _meminfo(text: str) -> dict[str, int]:
    """/proc/meminfo's values in bytes (the kernel writes kB)."""
    values: dict[str, int] = {}
    for line in text.splitlines():
        name, _, rest = line.partition(":")
        parts = rest.split()
        if parts and parts[0].isdigit():
            values[name] = int(parts[0]) * (1024 if parts[1:] == ["kB"] else 1)
    return values


def _stalls(pressure: Path) -> tuple[int | None, int | None]:
    """The `total=` microseconds of PSI's `some` and `full` lines; None where the kernel has no PSI."""
    try:
        text = pressure.read_text()
    except OSError:
        return None, None
    totals = {line.split()[0]: int(line.rpartition("total=")[2]) for line in text.splitlines() if "total=" in line}
    return totals.get("some"), totals.get("full")


def summed(readings: list[Reading]) -> HostMemory:
    first, last = readings[0], readings[-1]
    return HostMemory(min(r.available for r in readings) / _GIB, max(r.dirty for r in readings) / _GIB,
                      max(r.writeback for r in readings) / _GIB, _elapsed(first.stall_some_us, last.stall_some_us),
                      _elapsed(first.stall_full_us, last.stall_full_us))


def _elapsed(first: int | None, last: int | None) -> float | None:
    return None if first is None or last is None else (last - first) / 1e6


class Sampler:
    """Reads the host's memory every `every_s` seconds in a thread while the `with` block runs (and once at each
    end); `summary()` afterwards."""

    def __init__(self, every_s: float = SAMPLE_S, meminfo: Path = MEMINFO, pressure: Path = PRESSURE) -> None:
        self.every_s, self.meminfo, self.pressure = every_s, meminfo, pressure
        self.readings: list[Reading] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, name="host-memory", daemon=True)

    def __enter__(self) -> Sampler:
        self.readings.append(read(self.meminfo, self.pressure))
        self._thread.start()
        return self

    def __exit__(self, _type: type[BaseException] | None, _value: BaseException | None,
                 _traceback: TracebackType | None) -> None:
        self._stop.set()
        self._thread.join()
        self.readings.append(read(self.meminfo, self.pressure))

    def summary(self) -> HostMemory:
        return summed(self.readings)

    def _sample(self) -> None:
        while not self._stop.wait(self.every_s):
            self.readings.append(read(self.meminfo, self.pressure))
