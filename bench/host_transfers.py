"""What moving a large problem's bytes through host memory costs on this host, one way against another: the figures
behind how inputs, outputs and timing sets cross between a judge, its GPU and its run children.

    PYTHONPATH=src python3 bench/host_transfers.py [--gib 4] [--dir DIR] [--threads 8] [--device cuda]

Prints seconds and GB/s for:
- a fresh shared region (wire/shared_region.py) given its pages: by fallocate (populate(), which holds the file's
  lock: one thread), and by touching it through a mapping, from one thread and from --threads threads at once;
  its page tables filled (pinning.prefaulted) from --threads threads; on a GPU, registering it with CUDA with
  its pages touched, with its page tables filled, and with its pages given by fallocate alone (the registration
  then fills the page tables, from one thread); and registering a second mapping of it, as a run child maps it,
  with and without its page tables filled first;
- a tensor file written, read back and removed, in --dir (the work root's file system; default: the system's
  temporary dir) and in /dev/shm where there is one; and written as parts of at most 1 GiB, several at once (as the
  judge writes its timing sets);
- on a GPU: a pinned buffer made as the pool makes one (pinned_buffers.py), registered fresh and with --threads
  threads touching its pages first;
- on a GPU: a device tensor copied into a pinned buffer and from there into a registered region, against copied
  straight into the region; and from the region back to the device.
Each figure is one run of its act (the first device copy includes none of CUDA's start: the source is made
before); compare rows of one run, not runs. Prints numbers; asserts nothing.
"""

from __future__ import annotations

import argparse
import functools
import mmap
import shutil
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import torch

from kernelgrade.evaluator.pinned_buffers import PinnedBuffers, pool, touched
from kernelgrade.evaluator.wire import tensorfile
from kernelgrade.evaluator.wire.pinning import address_of, prefaulted, register_pinned, unregister_pinned
from kernelgrade.evaluator.wire.shared_region import SharedRegion

SHM = Path("/dev/shm")


def main(argv: Sequence[str] | None = None) -> None:
    args = _parser().parse_args(argv)
    nbytes = int(args.gib * 1024**3)
    print(f"# {nbytes / 1024**3:.2f} GiB, {args.threads} threads, device {args.device}")
    for label, seconds in [*_region_pages(nbytes, args.threads, args.device == "cuda"),
                           *_files(nbytes, [args.dir, *([SHM] if SHM.is_dir() else [])]),
                           *(_pinned_buffers(nbytes, args.threads) if args.device == "cuda" else []),
                           *(_device_copies(nbytes) if args.device == "cuda" else [])]:
        print(f"{label:<58} {seconds:8.3f} s {nbytes / max(seconds, 1e-9) / 1e9:8.2f} GB/s")


def _region_pages(nbytes: int, threads: int, cuda: bool) -> list[tuple[str, float]]:
    rows = [("region: pages by fallocate", _timed_region(nbytes, lambda r, _v: r.populate(nbytes)))]
    rows.append(("region: pages by touching, 1 thread", _timed_region(nbytes, lambda _r, v: _touch(v, 1))))
    rows.append((f"region: pages by touching, {threads} threads",
                 _timed_region(nbytes, lambda _r, v: _touch(v, threads))))
    rows.append((f"region: page tables filled, {threads} threads",
                 _timed_region(nbytes, lambda _r, v: _prefault(v, threads))))
    if cuda:
        rows.append(("region: registered with CUDA, pages touched",
                     _timed_region(nbytes, lambda _r, v: _register(v), before=lambda v: _touch(v, threads))))
        rows.append(("region: registered with CUDA, page tables filled",
                     _timed_region(nbytes, lambda _r, v: _register(v), before=lambda v: _prefault(v, threads))))
        rows.append(("region: registered with CUDA, pages by fallocate only",
                     _timed_region(nbytes, lambda _r, v: _register(v))))
        rows.append(("region: a second mapping registered (the child's)", _second_mapping(nbytes, 0)))
        rows.append((f"region: a second mapping, page tables filled ({threads} threads) and registered",
                     _second_mapping(nbytes, threads)))
    return rows


def _timed_region(nbytes: int, act: Callable[[SharedRegion, torch.Tensor], None],
                  before: Callable[[torch.Tensor], None] = lambda _v: None) -> float:
    """Seconds `act` takes on a fresh, mapped region of `nbytes` (its view as a uint8 tensor)."""
    region = SharedRegion.create(pin=False)
    try:
        view = torch.frombuffer(region.reserve(nbytes), dtype=torch.uint8)
        before(view)
        return _seconds(lambda: act(region, view))
    finally:
        region.close()


def _second_mapping(nbytes: int, threads: int) -> float:
    """Seconds to register another mapping of a region the judge has given its pages, as a run child maps it:
    its page tables filled by `threads` threads first (none: 0), that included."""
    region = SharedRegion.create(pin=False)
    try:
        region.reserve(nbytes)
        memory = mmap.mmap(region.fd, nbytes)
        address = address_of(memory)
        started = time.perf_counter()
        if threads:
            prefaulted(address, nbytes, threads)
        registered = register_pinned(address, nbytes)
        seconds = time.perf_counter() - started
        if registered:
            unregister_pinned(address)
        memory.close()
        return seconds
    finally:
        region.close()


def _prefault(view: torch.Tensor, threads: int) -> None:
    prefaulted(view.data_ptr(), view.numel(), threads)


def _touch(view: torch.Tensor, threads: int) -> None:
    touched(view.data_ptr(), view.numel(), threads)


def _register(view: torch.Tensor) -> None:
    if register_pinned(view.data_ptr(), view.numel()):
        unregister_pinned(view.data_ptr())


def _files(nbytes: int, folders: list[Path]) -> list[tuple[str, float]]:
    values = [torch.ones(nbytes, dtype=torch.uint8)]
    workers = tensorfile.WRITE_WORKERS
    rows = []
    for folder in folders:
        path = Path(tempfile.mkdtemp(prefix="host-transfers-", dir=folder)) / "timing_0.kgt"
        rows.append((f"file in {folder}: written", _seconds(functools.partial(tensorfile.save, path, values))))
        rows.append((f"file in {folder}: read", _seconds(functools.partial(tensorfile.load, path))))
        tensorfile.remove(path)
        rows.append((f"file in {folder}: written as parts, {workers} at once",
                     _seconds(functools.partial(tensorfile.save, path, values, workers=workers))))
        rows.append((f"file in {folder}: removed", _seconds(functools.partial(shutil.rmtree, path.parent))))
    return rows


def _pinned_buffers(nbytes: int, threads: int) -> list[tuple[str, float]]:
    """A pool buffer made (mapped, advised, registered) as the pool makes one, its pages faulted in by the
    registration, and with `threads` threads touching them first."""
    rows = []
    for label, touch_threads in (("registered fresh", 0), (f"touched by {threads} threads, then registered", threads)):
        buffers = PinnedBuffers(keep_bytes=0, touch_threads=touch_threads)
        seconds = _seconds(lambda: buffers.empty((nbytes,), torch.uint8))  # noqa: B023 (called at once)
        buffers.trim()
        rows.append((f"pinned buffer: {label}", seconds))
    return rows


def _device_copies(nbytes: int) -> list[tuple[str, float]]:
    source = torch.ones(nbytes, dtype=torch.uint8, device="cuda")
    pinned = pool().empty((nbytes,), torch.uint8)
    assert pinned is not None, "pinning refused: no pinned buffer to copy through"
    region = SharedRegion.create(pin=True)
    try:
        view = torch.frombuffer(region.reserve(nbytes), dtype=torch.uint8)  # mapped and registered, as the judge's
        return [("device -> pinned buffer", _synced(lambda: pinned.copy_(source))),
                ("pinned buffer -> region (a host copy)", _synced(lambda: view.copy_(pinned))),
                ("device -> region", _synced(lambda: view.copy_(source))),
                ("region -> device", _synced(lambda: source.copy_(view)))]
    finally:
        region.close()


def _synced(act: Callable[[], object]) -> float:
    def synced() -> None:
        act()
        torch.cuda.synchronize()
    return _seconds(synced)


def _seconds(act: Callable[[], object]) -> float:
    started = time.perf_counter()
    act()
    return time.perf_counter() - started


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--gib", type=float, default=4.0, help="bytes moved in each figure, in GiB")
    parser.add_argument("--dir", type=Path, default=Path(tempfile.gettempdir()),
                        help="where the tensor file goes: the work root's file system")
    parser.add_argument("--threads", type=int, default=8)
    parser.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
    return parser


if __name__ == "__main__":
    main()
