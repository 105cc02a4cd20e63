"""The judge's tensor files: a round trip, and no way for a child to redirect or block the judge's I/O."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from kernelgrade.evaluator.wire import tensorfile


def test_values_round_trip(tmp_path: Path) -> None:
    values = [torch.randn(3, 4), torch.tensor(2.5, dtype=torch.bfloat16), 7, (1, 2), [torch.arange(5)], None]
    tensorfile.save(tmp_path / "x.kgt", values)
    back = tensorfile.load(tmp_path / "x.kgt")
    assert torch.equal(back[0], values[0])
    assert back[1].dtype == torch.bfloat16
    assert back[2:4] == [7, (1, 2)]
    assert torch.equal(back[4][0], torch.arange(5))
    assert back[5] is None


@pytest.mark.parametrize("device", ["cpu", pytest.param("cuda", marks=pytest.mark.gpu)])
def test_loading_onto_a_device_moves_the_top_level_tensors_only(tmp_path: Path, device: str) -> None:
    values = [torch.randn(256, 256, device=device).t(), torch.tensor(3, device=device), [torch.arange(5)], 1.5]
    tensorfile.save(tmp_path / "x.kgt", values)
    back = tensorfile.load(tmp_path / "x.kgt", torch.device(device))
    assert back[0].device.type == device and torch.equal(back[0], values[0])
    assert back[1].device.type == device and int(back[1]) == 3
    assert back[2][0].device.type == "cpu"  # as to_device() leaves them
    assert back[3] == 1.5


def test_save_replaces_a_planted_symlink_instead_of_writing_through_it(tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.write_text("precious")
    planted = tmp_path / "inputs.kgt"
    planted.symlink_to(victim)
    tensorfile.save(planted, [torch.ones(2)])
    assert victim.read_text() == "precious"
    assert not planted.is_symlink()


def test_load_refuses_links_and_fifos(tmp_path: Path) -> None:
    real = tmp_path / "real.kgt"
    tensorfile.save(real, [torch.ones(2)])
    link = tmp_path / "link.kgt"
    link.symlink_to(real)
    with pytest.raises(tensorfile.TensorFileError):
        tensorfile.load(link)
    fifo = tmp_path / "fifo.kgt"
    os.mkfifo(fifo)
    with pytest.raises(tensorfile.TensorFileError, match="not a regular file"):
        tensorfile.load(fifo)


def test_a_header_that_lies_about_sizes_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "x.kgt"
    tensorfile.save(path, [torch.ones(4)])
    data = bytearray(path.read_bytes())
    path.write_bytes(bytes(data[:-4]))  # truncated payload
    with pytest.raises(tensorfile.TensorFileError):
        tensorfile.load(path)


def test_a_tensor_over_2_gib_round_trips(tmp_path: Path) -> None:
    """The built-in memory-bound problems have 3 GiB inputs; 2**31 bytes overflows a C int on some paths."""
    big = torch.zeros(2**31 + 8, dtype=torch.uint8)
    big[:4] = torch.tensor([1, 2, 3, 4], dtype=torch.uint8)
    big[-4:] = torch.tensor([5, 6, 7, 8], dtype=torch.uint8)
    tensorfile.save(tmp_path / "big.kgt", [big])
    del big
    (back,) = tensorfile.load(tmp_path / "big.kgt")
    assert back.numel() == 2**31 + 8
    assert back[:4].tolist() == [1, 2, 3, 4] and back[-4:].tolist() == [5, 6, 7, 8]
    assert int(back[4:-4].count_nonzero()) == 0


def test_a_header_promising_more_than_the_file_holds_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "short.kgt"
    tensorfile.save(path, [torch.ones(1024)])
    with open(path, "r+b") as f:
        f.truncate(os.path.getsize(path) - 4)
    with pytest.raises(tensorfile.TensorFileError, match=r"does not match|too short"):
        tensorfile.load(path)


def test_a_file_over_the_part_size_is_written_as_parts_and_read_back_whole(tmp_path: Path) -> None:
    values = [torch.randn(1000, 37), 3, [torch.arange(777)], torch.randn(5).double()]
    path = tmp_path / "out.kgt"
    tensorfile.save(path, values, part_bytes=4096)
    sizes = [tensorfile.part_path(path, i).stat().st_size for i in range(40)
             if tensorfile.part_path(path, i).exists()]
    assert len(sizes) > 30 and max(sizes) <= 4096
    assert tensorfile.size(path) == sum(sizes)
    back = tensorfile.load(path)
    assert torch.equal(back[0], values[0]) and back[1] == 3
    assert torch.equal(back[2][0], values[2][0]) and torch.equal(back[3], values[3])


@pytest.mark.parametrize("part_bytes", [None, 3000])
def test_host_tensors_written_as_parts_at_once_read_back_whole(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                               part_bytes: int | None) -> None:
    """With workers, a file of host tensors past WRITE_PART_BYTES goes out as parts of that size (or of a smaller
    limit), several written at once: parts that cut the header and tensors, a non-contiguous tensor, values after;
    the parts of a larger earlier file go."""
    monkeypatch.setattr(tensorfile, "WRITE_PART_BYTES", 5000)
    path = tmp_path / "timing_0.kgt"
    tensorfile.save(path, [torch.zeros(40_000, dtype=torch.uint8)], part_bytes=part_bytes, workers=3)
    values = [torch.randn(300, 17), "note", torch.randn(40, 30).t(), [torch.arange(500)], 7]
    tensorfile.save(path, values, part_bytes=part_bytes, workers=3)
    sizes = [tensorfile.part_path(path, i).stat().st_size for i in range(40) if tensorfile.part_path(path, i).exists()]
    limit = part_bytes or 5000
    assert len(sizes) == -(-tensorfile.size(path) // limit) > 3 and max(sizes) == limit
    back = tensorfile.load(path)
    assert torch.equal(back[0], values[0]) and back[1] == "note" and torch.equal(back[2], values[2])
    assert torch.equal(back[3][0], values[3][0]) and back[4] == 7
    one_at_a_time = tmp_path / "one.kgt"
    tensorfile.save(one_at_a_time, values, part_bytes=part_bytes)
    assert _stream_bytes(one_at_a_time) == _stream_bytes(path)  # the same bytes, however cut


def _stream_bytes(path: Path) -> bytes:
    parts = [tensorfile.part_path(path, i) for i in range(tensorfile.MAX_PARTS)]
    return b"".join(part.read_bytes() for part in parts if part.exists())


def test_a_file_linked_under_another_name_brings_its_parts(tmp_path: Path) -> None:
    path, other = tmp_path / "timing_0.kgt", tmp_path / "child" / "set_0.kgt"
    other.parent.mkdir()
    values = [torch.randn(1000, 37)]
    tensorfile.save(path, values, part_bytes=4096)
    tensorfile.link(path, other)
    assert os.path.samefile(tensorfile.part_path(path, 5), tensorfile.part_path(other, 5))
    assert torch.equal(tensorfile.load(other)[0], values[0])


def test_a_smaller_file_removes_the_parts_of_a_larger_one(tmp_path: Path) -> None:
    path = tmp_path / "out.kgt"
    tensorfile.save(path, [torch.randn(4096)], part_bytes=4096)
    assert tensorfile.part_path(path, 3).exists()
    tensorfile.save(path, [torch.ones(2)], part_bytes=4096)
    assert not tensorfile.part_path(path, 1).exists()
    assert torch.equal(tensorfile.load(path)[0], torch.ones(2))
    tensorfile.remove(path)
    assert not path.exists()


def test_the_part_size_defaults_to_the_file_size_limit(tmp_path: Path) -> None:
    """A child under a lowered RLIMIT_FSIZE writes parts under it instead of dying of SIGXFSZ/EFBIG."""
    code = ("import resource, signal, sys, torch; from pathlib import Path;"
            "from kernelgrade.evaluator.wire import tensorfile;"
            "signal.signal(signal.SIGXFSZ, signal.SIG_IGN);"
            "resource.setrlimit(resource.RLIMIT_FSIZE, (65536, resource.RLIM_INFINITY));"
            "tensorfile.save(Path(sys.argv[1]), [torch.arange(100_000, dtype=torch.float32)])")
    path = tmp_path / "out.kgt"
    subprocess.run([sys.executable, "-c", code, str(path)], check=True, env=os.environ)
    assert path.stat().st_size == 65536 and tensorfile.part_path(path, 6).exists()
    assert torch.equal(tensorfile.load(path)[0], torch.arange(100_000, dtype=torch.float32))


def test_a_part_that_is_a_link_or_missing_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "out.kgt"
    tensorfile.save(path, [torch.randn(4096)], part_bytes=4096)
    victim = tmp_path / "victim"
    victim.write_bytes(tensorfile.part_path(path, 2).read_bytes())
    tensorfile.part_path(path, 2).unlink()
    tensorfile.part_path(path, 2).symlink_to(victim)
    with pytest.raises(tensorfile.TensorFileError, match="not a regular file"):
        tensorfile.load(path)
    tensorfile.part_path(path, 2).unlink()  # the stream now ends at part 1: shorter than the header says
    with pytest.raises(tensorfile.TensorFileError, match=r"does not match|too short"):
        tensorfile.load(path)


def test_a_writer_needing_too_many_parts_fails_before_writing(tmp_path: Path) -> None:
    with pytest.raises(tensorfile.TensorFileError, match="parts"):
        tensorfile.save(tmp_path / "x.kgt", [torch.zeros(tensorfile.MAX_PARTS * 64)], part_bytes=64)
    assert not (tmp_path / "x.kgt").exists()


def test_parts_larger_in_all_than_the_reader_expects_are_refused_before_reading(tmp_path: Path) -> None:
    """A child could plant gigabytes of parts; the judge knows how large the outputs it checked can be."""
    path = tmp_path / "out.kgt"
    tensorfile.save(path, [torch.ones(1000)], part_bytes=1024)
    assert torch.equal(tensorfile.load(path, max_bytes=8 + 4096 + 4000)[0], torch.ones(1000))
    tensorfile.part_path(path, 9).write_bytes(b"\0" * 100)  # not consecutive: never part of the stream
    tensorfile.part_path(path, 4).write_bytes(b"\0" * 5000)
    with pytest.raises(tensorfile.TensorFileError, match="more than"):
        tensorfile.load(path, max_bytes=8 + 4096 + 4000)


@pytest.mark.parametrize("workers", [1, 3])
def test_staged_reads_land_each_piece_in_its_place_across_parts(tmp_path: Path, workers: int,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """A staged tensor's pieces are read from their places in the file by several threads at once
    (staging.read_to_device; on the CPU straight into the tensor), through parts that cut pieces, and the values
    after it are read from where it ends. A GPU is what stages in production; the reads are the same here."""
    monkeypatch.setattr(tensorfile, "_staged", lambda _device, nbytes: nbytes > 1000)
    monkeypatch.setattr(tensorfile.staging, "STAGE_BYTES", 4096 + 24)
    monkeypatch.setattr(tensorfile.staging, "READ_WORKERS", workers)
    big = torch.randn(300, 97) * 100
    values = [big, big.t(), torch.arange(7), "note", big[:5].to(torch.int64)]
    path = tmp_path / "out.kgt"
    tensorfile.save(path, values, part_bytes=50_000)
    assert path.with_name("out.kgt.part2").exists()
    loaded = tensorfile.load(path, torch.device("cpu"))
    for got, want in zip([*loaded[:3], loaded[4]], [*values[:3], values[4]], strict=True):
        assert torch.equal(got, want)
    assert loaded[3] == "note"
    last = sorted(tmp_path.iterdir())[-1]
    os.truncate(last, last.stat().st_size - 1)
    with pytest.raises(tensorfile.TensorFileError):
        tensorfile.load(path, torch.device("cpu"))


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.int64, torch.bool])
def test_large_gpu_tensors_cross_a_piece_at_a_time_across_parts(tmp_path: Path, dtype: torch.dtype,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """Past PINNED_MAX_BYTES, written and read through the two pinned buffers (staging.py): pieces that do not
    divide the tensor, a tensor that is not contiguous, parts that cut through pieces."""
    monkeypatch.setattr(tensorfile, "PINNED_MAX_BYTES", 1000)
    monkeypatch.setattr(tensorfile.staging, "STAGE_BYTES", 4096 + 24)
    big = (torch.randn(300, 97, device="cuda") * 100).to(dtype)
    values = [big, big.t(), torch.arange(7, device="cuda"), "note"]
    path = tmp_path / "out.kgt"
    tensorfile.save(path, values, part_bytes=50_000)
    assert path.with_name("out.kgt.part1").exists()
    loaded = tensorfile.load(path, torch.device("cuda"))
    for got, want in zip(loaded[:3], values[:3], strict=True):
        assert got.device.type == "cuda" and torch.equal(got, want)
    assert loaded[3] == "note"
    os.truncate(path.with_name(f"out.kgt.part{len(list(tmp_path.iterdir())) - 1}"), 10)
    with pytest.raises(tensorfile.TensorFileError):
        tensorfile.load(path, torch.device("cuda"))


def _pinned_buffer(nbytes: int, device: str) -> tuple[torch.Tensor, memoryview]:
    """Host memory CUDA copies to and from by DMA (as a registered region is), and a view of it."""
    memory = torch.empty(nbytes, dtype=torch.uint8, pin_memory=device == "cuda")
    return memory, tensorfile.staging.byte_view(memory.data_ptr(), nbytes)


@pytest.mark.parametrize("device", ["cpu", pytest.param("cuda", marks=pytest.mark.gpu)])
def test_pinned_host_tensors_placed_through_the_device_land_whole_and_in_order(device: str,
                                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """save_to_memory(through=GPU): pinned host tensors past the threshold go onto the device and back a piece at
    a time on two streams (pieces that do not divide them; a small tensor and a pageable one by torch's copy).
    On the CPU nothing is pinned and every tensor takes torch's copy: the same bytes either way."""
    monkeypatch.setattr(tensorfile.staging, "THROUGH_DEVICE_MIN_BYTES", 10_000)
    monkeypatch.setattr(tensorfile.staging, "STAGE_BYTES", 4096 + 24)
    copied: list[int] = []
    through = tensorfile.staging.copy_through_device
    monkeypatch.setattr(tensorfile.staging, "copy_through_device",
                        lambda dst, src, gpu: copied.append(src.numel()) or through(dst, src, gpu))
    pinned = device == "cuda"
    big = (torch.randn(300, 97) * 100).pin_memory() if pinned else torch.randn(300, 97) * 100
    values = [big, torch.arange(7).to(torch.int16), "note", torch.randn(50_000, dtype=torch.float64), big.t()]
    memory, view = _pinned_buffer(1 << 20, device)
    memory.fill_(0xAB)  # what a previous trial left: every byte must be written over
    used = tensorfile.save_to_memory(view, values, torch.device("cuda", 0))
    assert used is not None
    back = tensorfile.load_from_memory(view[:used])
    for got, want in zip([back[0], back[1], back[3], back[4]], [values[0], values[1], values[3], values[4]],
                         strict=True):
        assert torch.equal(got, want)
    assert back[2] == "note"
    # Through the device: the pinned tensor alone (big.t() is copied contiguous first, into pageable memory).
    assert copied == ([300 * 97 * 4] if pinned else [])


@pytest.mark.gpu
def test_a_copy_through_the_device_is_not_written_over_by_work_queued_on_the_judges_stream(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Blocks of the pieces' size freed on the judge's stream while writes into them are still queued there, as the
    next trial's making leaves them: torch's allocator hands such a block to the next allocation on that stream
    at once. A piece taken from one carried those writes into the region between its two copies (on an H200,
    pieces allocated on the judge's stream: 47 of these 256 MiB came out changed)."""
    monkeypatch.setattr(tensorfile.staging, "STAGE_BYTES", 8 << 20)
    device = torch.device("cuda", 0)
    src = torch.arange(64 << 20, dtype=torch.int32).view(torch.uint8).pin_memory()
    dst = torch.zeros_like(src).pin_memory()
    assert tensorfile.staging.copy_through_device(dst[:1024], src[:1024], device)  # streams made, context warm
    freed = [torch.empty(8 << 20, dtype=torch.uint8, device=device) for _ in range(2)]
    for _ in range(200):  # about 200 ms of writes on an H200, a burst every millisecond
        torch.cuda._sleep(2_000_000)
        for block in freed:
            block.fill_(0xAB)
    written = torch.cuda.Event()  # type: ignore[no-untyped-call]
    written.record()
    del freed, block
    assert tensorfile.staging.copy_through_device(dst, src, device)
    assert not written.query(), "the writes ended before the copy: this run tests nothing"
    torch.cuda.synchronize(device)
    assert torch.equal(dst, src)
