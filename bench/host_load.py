"""Load on the host's cores while something is timed: real compiles of torch/extension.h (the shape of a
load_inline build's main.cpp: one core and about 1 GB each, for 15-20 s, again and again), or plain spinning
Python processes. Started on given cores, stopped (with everything they started) on leaving the block.
Imports only the standard library and torch.
"""

from __future__ import annotations

import os
import shlex
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

KINDS = ("builds", "burn")
# Long enough for every loader to have begun its first compile, so that the timing starts under full load.
RAMP_S = 3.0


def _build_loop(include_flags: str, source: Path) -> str:
    return f"while true; do g++ -std=c++17 -fsyntax-only {include_flags} {shlex.quote(str(source))}; done"


@contextmanager
def host_load(kind: str, cpus: Sequence[int], processes: int | None = None) -> Iterator[str]:
    """One loader per CPU in `cpus` (or `processes` of them), each pinned to `cpus`; yields a description."""
    count = processes or len(cpus)
    with tempfile.TemporaryDirectory(prefix="host-load-") as tmp:
        argv = _loader_argv(kind, Path(tmp))
        loaders = [subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                    start_new_session=True) for _ in range(count)]
        try:
            for loader in loaders:
                os.sched_setaffinity(loader.pid, set(cpus))  # the loop's later children inherit it
            time.sleep(RAMP_S)
            yield f"{count} {kind} loader(s) on CPUs {_ranges(cpus)}"
        finally:
            for loader in loaders:
                os.killpg(loader.pid, signal.SIGKILL)
                loader.wait()


def _loader_argv(kind: str, tmp: Path) -> list[str]:
    if kind == "burn":
        return [sys.executable, "-c", "while True: pass"]
    if kind != "builds":
        raise ValueError(f"unknown load {kind!r}; use one of {', '.join(KINDS)}")
    from torch.utils.cpp_extension import include_paths

    source = tmp / "main.cpp"
    source.write_text("#include <torch/extension.h>\n")
    flags = " ".join(f"-I{shlex.quote(p)}" for p in include_paths())
    return ["bash", "-c", _build_loop(flags, source)]


def _ranges(cpus: Sequence[int]) -> str:
    ordered, parts = sorted(cpus), []
    start = prev = ordered[0]
    for cpu in [*ordered[1:], None]:
        if cpu is not None and cpu == prev + 1:
            prev = cpu
            continue
        parts.append(f"{start}-{prev}" if prev > start else str(start))
        if cpu is not None:
            start = prev = cpu
    return ",".join(parts)


def main(argv: Sequence[str] | None = None) -> int:
    """Load the given CPUs until killed (a GPU run starts it beside a test suite)."""
    import argparse

    parser = argparse.ArgumentParser(description="Keep CPUs busy until killed.")
    parser.add_argument("kind", choices=KINDS)
    parser.add_argument("--cpus", default="", help="kernel list format, e.g. 0-13 (default: every usable CPU)")
    args = parser.parse_args(argv)
    cpus = _parse(args.cpus) if args.cpus else sorted(os.sched_getaffinity(0))
    with host_load(args.kind, cpus) as what:
        print(f"# load: {what}", flush=True)
        signal.sigwait({signal.SIGTERM, signal.SIGINT})
    return 0


def _parse(text: str) -> list[int]:
    cpus: list[int] = []
    for part in text.split(","):
        low, _, high = part.partition("-")
        cpus.extend(range(int(low), int(high or low) + 1))
    return cpus


if __name__ == "__main__":
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM, signal.SIGINT})
    sys.exit(main())
