"""The judge's tensor files: a round trip, and no way for a child to redirect or block the judge's I/O."""

from __future__ import annotations

import os
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
