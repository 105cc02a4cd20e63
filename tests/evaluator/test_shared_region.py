"""The shared region a run child's outputs cross: a round trip as a tensor file's, what the child can do to it,
and the real run child writing into it (or into the file where the region is not there)."""

from __future__ import annotations

import dataclasses
import errno
import fcntl
import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import torch

from kernelgrade.evaluator import Verdict, evaluate
from kernelgrade.evaluator.host.device_room import read_region
from kernelgrade.evaluator.host.session import RunSession
from kernelgrade.evaluator.sandbox.launcher import ChildSpec, SubprocessLauncher
from kernelgrade.evaluator.wire import shared_region, tensorfile
from kernelgrade.evaluator.wire.replies import TimedOutputsReply
from kernelgrade.evaluator.wire.shared_region import SharedRegion, aligned
from kernelgrade.problems import find_builtin
from tests.conftest import RequestFactory
from tests.evaluator.test_integrity_engine import TORCH_SUBMISSION

CPU = torch.device("cpu")


@pytest.fixture
def regions() -> Iterator[tuple[SharedRegion, SharedRegion]]:
    """The judge's region and a second mapping of it through the same descriptor, as its child's."""
    judge = SharedRegion.create(pin=False)
    child = SharedRegion.attach(judge.fd, pin=False)
    assert child is not None
    yield judge, child
    child._unmap()
    judge.close()


@pytest.mark.parametrize("device", ["cpu", pytest.param("cuda", marks=pytest.mark.gpu)])
def test_values_cross_the_region_as_they_cross_a_file(regions: tuple[SharedRegion, SharedRegion],
                                                     device: str) -> None:
    judge, child = regions
    judge.pin = child.pin = device == "cuda"
    values: list[Any] = [torch.randn(64, 32, device=device).t(), torch.tensor(2.5, dtype=torch.bfloat16, device=device),
              torch.empty(0, 3, device=device), 7, (1, "x"), [torch.arange(5)], None]
    judge.reserve(1 << 20)
    view = child.view(judge.reserved)
    assert view is not None
    used = tensorfile.save_to_memory(view, values)
    assert used is not None and used < 1 << 20
    back = read_region(judge, used, torch.device(device), outputs_bytes=64 * 32 * 4 + 2)
    assert back[0].device.type == device and torch.equal(back[0], values[0])
    assert back[1].dtype == torch.bfloat16 and float(back[1]) == 2.5
    assert back[2].shape == (0, 3)
    assert back[3:5] == [7, (1, "x")] and back[6] is None
    assert back[5][0].device.type == "cpu" and torch.equal(back[5][0], torch.arange(5))  # as a file's load


def test_pages_given_ahead_are_not_mapped_beyond_what_the_judge_reserved_and_the_child_was_offered(
        regions: tuple[SharedRegion, SharedRegion]) -> None:
    """A region given pages for a large problem serves a small one: each side maps (and on a GPU host registers)
    only what the call uses."""
    judge, child = regions
    judge.populate(8 << 20)
    assert os.fstat(judge.fd).st_size == 8 << 20 and os.fstat(judge.fd).st_blocks * 512 == 8 << 20
    view = judge.reserve(5000)
    view[:5] = b"hello"
    offered = child.view(judge.reserved)
    assert offered is not None and bytes(offered[:5]) == b"hello"
    assert judge._memory is not None and child._memory is not None
    assert len(judge._memory) == len(child._memory) == judge.reserved == 1 << 20
    assert child.view(16 << 20) is None  # past the file's end: nothing there to map


def test_a_region_grown_has_its_pages_before_it_is_mapped(regions: tuple[SharedRegion, SharedRegion]) -> None:
    judge, _child = regions
    judge.reserve(3 << 20)
    assert os.fstat(judge.fd).st_size == 3 << 20 and os.fstat(judge.fd).st_blocks * 512 == 3 << 20
    judge.reserve(70 << 20)  # past 64 MiB the region grows by 64 MiB steps
    assert os.fstat(judge.fd).st_size == 128 << 20 and os.fstat(judge.fd).st_blocks * 512 == 128 << 20


@pytest.mark.parametrize("accepted", [True, False])
def test_the_region_says_how_large_it_grew_and_whether_cuda_registered_it(monkeypatch: pytest.MonkeyPatch,
                                                                          accepted: bool) -> None:
    registered: list[int] = []
    monkeypatch.setattr(shared_region, "register_pinned", lambda _address, size: registered.append(size) or accepted)
    monkeypatch.setattr(shared_region, "unregister_pinned", lambda _address: None)
    judge = SharedRegion.create(pin=True)
    try:
        assert judge.describe() == "unused"
        judge.reserve(3 << 20)
        assert registered == [3 << 20]
        refused = "registration with CUDA refused: copies through the driver's staging"
        how = "registered with CUDA" if accepted else refused
        assert judge.describe() == f"3 MiB, {how}"
        judge.reserve((1 << 30) + 1)  # past 64 MiB, grown by 64 MiB steps
        assert registered == ([3 << 20, (1 << 30) + (64 << 20)] if accepted else [3 << 20])
        assert judge.describe() == f"1.06 GiB, {how}"
    finally:
        judge.close()


def test_outputs_that_do_not_fit_are_refused_and_the_region_left_as_it_was(
        regions: tuple[SharedRegion, SharedRegion]) -> None:
    judge, _child = regions
    view = judge.reserve(4096)
    view[:4] = b"keep"
    assert tensorfile.save_to_memory(view[:4096], [torch.zeros(2000)]) is None
    assert bytes(view[:4]) == b"keep"


def test_a_read_is_bounded_by_what_the_judge_reserved_and_expects(regions: tuple[SharedRegion, SharedRegion]) -> None:
    """The child may grow the file and claim any size: the judge maps only what it reserved, and reads no more
    than the outputs it expects and a header."""
    judge, child = regions
    judge.reserve(1)
    os.ftruncate(child.fd, 4 * judge.reserved)
    with pytest.raises(tensorfile.TensorFileError, match="of a region of"):
        read_region(judge, 2 * judge.reserved, CPU, outputs_bytes=16)
    view = child.view(judge.reserved)
    assert view is not None
    used = tensorfile.save_to_memory(view, [torch.zeros(1 << 16)])
    assert used is not None
    with pytest.raises(tensorfile.TensorFileError, match="more than"):
        read_region(judge, used, CPU, outputs_bytes=16 - tensorfile.MAX_HEADER_BYTES)


def test_a_header_the_child_spoiled_is_an_error_not_a_crash(regions: tuple[SharedRegion, SharedRegion]) -> None:
    judge, _child = regions
    view = judge.reserve(4096)
    tensorfile.save_to_memory(view, [torch.ones(10)])
    view[:8] = (1 << 40).to_bytes(8, "little")
    with pytest.raises(tensorfile.TensorFileError, match="bad header length"):
        read_region(judge, 4096, CPU, outputs_bytes=40)
    tensorfile.save_to_memory(view, [torch.ones(10)])
    view[8:12] = b"\xff\xfe{["
    with pytest.raises(tensorfile.TensorFileError, match="malformed header"):
        read_region(judge, 4096, CPU, outputs_bytes=40)


CHILD = """
import fcntl, json, mmap, os, sys
fd, out = {fd}, {{}}
memory = mmap.mmap(fd, 0)
memory[:5] = b"hello"
out["size"] = len(memory)
for name, action in (("shrink", lambda: os.ftruncate(fd, 0)),
                     ("seal", lambda: fcntl.fcntl(fd, fcntl.F_ADD_SEALS, fcntl.F_SEAL_GROW))):
    try:
        action()
        out[name] = 0
    except OSError as exc:
        out[name] = exc.errno
print(json.dumps(out), flush=True)
"""


def test_a_child_writes_the_region_but_can_neither_shrink_it_nor_seal_it(tmp_path: Path) -> None:
    """A region shrunk under the judge's mapping would kill the judge with a SIGBUS on its next read; a seal
    against growing would stop the judge from reserving."""
    judge = SharedRegion.create(pin=False)
    try:
        judge.reserve(1)
        done = subprocess.run(["python3", "-c", CHILD.format(fd=judge.fd)], capture_output=True, text=True,
                              pass_fds=(judge.fd,), timeout=60, check=True)
        assert json.loads(done.stdout) == {"size": judge.reserved, "shrink": errno.EPERM, "seal": errno.EPERM}
        view = judge.view(5)
        assert view is not None and bytes(view) == b"hello"
        assert fcntl.fcntl(judge.fd, fcntl.F_GET_SEALS) == fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_SEAL
    finally:
        judge.close()


SUBMISSION = """import torch

class ModelNew(torch.nn.Module):
    def forward(self, x):
        return x * 2, x.sum()
"""


class FdDroppingLauncher(SubprocessLauncher):
    """Starts the child without the descriptors it should inherit, as a launcher that did not pass them on."""

    def popen(self, spec: ChildSpec) -> subprocess.Popen[bytes]:
        return super().popen(dataclasses.replace(spec, shared_fds=()))


@pytest.mark.parametrize("launcher", [SubprocessLauncher(), FdDroppingLauncher()], ids=["region", "no-region"])
def test_the_run_child_reads_its_inputs_and_writes_its_outputs_in_the_region_or_else_in_files(
        tmp_path: Path, launcher: SubprocessLauncher) -> None:
    work = tmp_path / "work"
    work.mkdir()
    (work / "submission.py").write_text(SUBMISSION)
    tensorfile.save(work / "init.kgt", [])
    x = torch.arange(12.0).reshape(3, 4)
    session = RunSession(launcher, work, None, {})
    try:
        session.started(timeout=120)  # importing torch on a loaded 2-core host takes seconds
        session.load(work / "submission.py", work / "init.kgt", 0, "cpu", (), timeout=120)
        session.grow_region([x], 1 << 20)  # the inputs' page, then a MiB of room: two whole MiB
        grown = session.region.reserved
        inputs_bytes = session.place_inputs([x], work / "inputs.kgt", 1 << 20)
        assert session.region.reserved == grown  # placed where it was grown, not grown again
        outputs_at = aligned(inputs_bytes)
        reply = session.call(work / "inputs.kgt", work / "outputs.kgt", [], 120, 0.0, outputs_at + 1024, inputs_bytes)
        if isinstance(launcher, FdDroppingLauncher):
            assert not session.region_mapped and inputs_bytes == grown == 0 and (work / "inputs.kgt").exists()
            assert reply.region_bytes == 0
            outputs = tensorfile.load(work / "outputs.kgt")
        else:
            assert session.region_mapped and inputs_bytes > 0 and not (work / "inputs.kgt").exists()
            assert grown == 2 << 20 and session.region.describe() == "2 MiB, host memory"
            assert reply.region_bytes > outputs_at == 4096 and not (work / "outputs.kgt").exists()
            outputs = read_region(session.region, reply.region_bytes, CPU, 13 * 4, start=outputs_at)
            assert torch.equal(tensorfile.load_from_memory(session.region.reserve(inputs_bytes))[0], x)
    finally:
        session.close()
    assert torch.equal(outputs[0], x * 2) and float(outputs[1]) == float(x.sum())


def test_room_made_while_the_child_loads_is_where_the_call_then_crosses(tmp_path: Path) -> None:
    """The judge grows the region for the first trial before the child's `load` has replied (correctness.py):
    the child maps the grown region, and the call crosses there with no growth of its own."""
    work = tmp_path / "work"
    work.mkdir()
    (work / "submission.py").write_text(SUBMISSION)
    tensorfile.save(work / "init.kgt", [])
    x = torch.arange(12.0).reshape(3, 4)
    session = RunSession(SubprocessLauncher(), work, None, {})
    try:
        session.started(timeout=120)  # importing torch on a loaded 2-core host takes seconds
        session.make_room([x], 1 << 20)
        grown = session.region.reserved
        session.load(work / "submission.py", work / "init.kgt", 0, "cpu", (), timeout=120)
        session.grow_region([x], 1 << 20)
        inputs_bytes = session.place_inputs([x], work / "inputs.kgt", 1 << 20)
        assert session.region_mapped and session.region.reserved == grown == 2 << 20
        reply = session.call(work / "inputs.kgt", work / "outputs.kgt", [], 120, 0.0, grown, inputs_bytes)
        outputs = read_region(session.region, reply.region_bytes, CPU, 13 * 4, start=aligned(inputs_bytes))
    finally:
        session.close()
    assert torch.equal(outputs[0], x * 2) and float(outputs[1]) == float(x.sum())


@pytest.mark.parametrize("launcher", [SubprocessLauncher(), FdDroppingLauncher()], ids=["region", "no-region"])
def test_timed_outputs_cross_a_round_at_a_time_and_are_all_rechecked(
        make_request: RequestFactory, monkeypatch: pytest.MonkeyPatch, launcher: SubprocessLauncher) -> None:
    """The region, grown for a checked call's inputs (two 4 MiB tensors) and its 4 MiB output, holds several kept
    outputs at a time: the rounds bring them all from the region, fewer rounds than outputs. Without the region
    each round brings one from its file."""
    rounds: list[TimedOutputsReply] = []
    ask = RunSession.timed_outputs

    def recorded(session: RunSession, *args: Any, **kwargs: Any) -> TimedOutputsReply:
        rounds.append(ask(session, *args, **kwargs))
        return rounds[-1]

    monkeypatch.setattr(RunSession, "timed_outputs", recorded)
    problem = find_builtin("add_relu")
    assert problem is not None
    result = evaluate(make_request(problem.spec(), TORCH_SUBMISSION), launcher)
    assert result.verdict is Verdict.CORRECT, result.failure
    kept = rounds[0].kept if rounds else 0
    assert kept >= 2 and sum(len(r.ends) for r in rounds) == kept
    if isinstance(launcher, FdDroppingLauncher):
        assert all(r.ends == (0,) for r in rounds)
    else:
        assert len(rounds) < kept and all(end > 4 << 20 for r in rounds for end in r.ends)
