"""What a long-lived judge keeps: warm run children, kept references, the secret seed pool, prebuilt imports."""

from __future__ import annotations

import subprocess
import threading
import time
from pathlib import Path

import pytest
import torch

from kernelgrade.evaluator import ProblemSpec
from kernelgrade.evaluator.child.prebuilt import Prebuilt, call_digest, importing
from kernelgrade.evaluator.judge.reference_cache import References
from kernelgrade.evaluator.judge.run_children import ChildKind, RunChildren
from kernelgrade.evaluator.request import DeviceKind
from kernelgrade.evaluator.sandbox.launcher import ChildSpec, SubprocessLauncher

CPU = ChildKind(None, "cpu", ())
CPU_DEVICE = torch.device("cpu")

ADD = ProblemSpec("add", """
import torch
class Model(torch.nn.Module):
    def forward(self, a, b):
        return a + b
def get_inputs():
    return [torch.randn(64), torch.randn(64)]
def get_init_inputs():
    return []
""", device=DeviceKind.CPU, content_hash="add-v1")

# Training-mode batch norm updates its running statistics on every call: its state changes when it runs.
BATCH_NORM = ProblemSpec("bn", """
import torch
class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.bn = torch.nn.BatchNorm1d(8)
    def forward(self, x):
        return self.bn(x)
def get_inputs():
    return [torch.randn(16, 8)]
def get_init_inputs():
    return []
""", device=DeviceKind.CPU, content_hash="bn-v1")


def _wait_ready(children: RunChildren, kind: ChildKind, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while children.ready(kind) == 0:
        assert time.monotonic() < deadline, "no spare child became ready"
        time.sleep(0.1)


def test_spare_children_are_started_ahead_and_never_handed_out_twice(tmp_path: Path) -> None:
    children = RunChildren(SubprocessLauncher(), tmp_path / "work", spares=1)
    try:
        first = children.take(CPU)
        _wait_ready(children, CPU)
        second = children.take(CPU)
        assert second.work_dir != first.work_dir
        assert second.child.proc.poll() is None and first.child.proc.poll() is None
        first.close()
        second.close()
    finally:
        children.close()


def test_a_spare_that_died_while_waiting_is_not_handed_out(tmp_path: Path) -> None:
    children = RunChildren(SubprocessLauncher(), tmp_path / "work", spares=1)
    try:
        children.take(CPU).close()
        _wait_ready(children, CPU)
        waiting = children._ready[CPU][0]
        waiting.child.kill()
        taken = children.take(CPU)
        assert taken is not waiting and taken.child.proc.poll() is None
        taken.close()
    finally:
        children.close()


def test_closing_stops_the_waiting_children(tmp_path: Path) -> None:
    children = RunChildren(SubprocessLauncher(), tmp_path / "work", spares=1)
    children.take(CPU).close()
    _wait_ready(children, CPU)
    waiting = children._ready[CPU][0]
    children.close()
    assert waiting.child.proc.wait(timeout=10) is not None
    assert not waiting.work_dir.exists()


class ThreadRecordingLauncher(SubprocessLauncher):
    """Records which thread started the child of each work dir."""

    def __init__(self) -> None:
        super().__init__()
        self.started_by: dict[Path, str] = {}

    def popen(self, spec: ChildSpec) -> subprocess.Popen[bytes]:
        self.started_by[spec.work_dir] = threading.current_thread().name
        return super().popen(spec)


def test_a_spare_already_starting_is_waited_for_rather_than_a_new_child_started(tmp_path: Path) -> None:
    launcher = ThreadRecordingLauncher()
    children = RunChildren(launcher, tmp_path / "work", spares=1)
    try:
        children.take(CPU).close()
        _wait_ready(children, CPU)
        children.take(CPU).close()  # takes the ready spare and asks for the next one
        starting = children.take(CPU)
        assert launcher.started_by[starting.work_dir] == "warm-children"
        starting.close()
    finally:
        children.close()


# A GPU child on a GPU host; here the same path runs with the device "cpu" (no CUDA needed to check the order).
GPU_LIKE = ChildKind(0, "cpu", ())


@pytest.mark.parametrize("kind", [CPU, GPU_LIKE], ids=["cpu_kind", "device_kind"])
def test_no_spare_warms_up_while_the_judge_measures(tmp_path: Path, kind: ChildKind) -> None:
    children = RunChildren(SubprocessLauncher(), tmp_path / "work", spares=1)
    try:
        with children.quiet():
            children.take(kind).close()  # asks for a spare
            time.sleep(8)  # ample for a spare to start and warm here, were it allowed to
            assert children.ready(kind) == 0
        _wait_ready(children, kind)
    finally:
        children.close()


def test_a_kept_reference_and_its_trials_are_reused() -> None:
    references = References()
    reference = references.reference(ADD, CPU_DEVICE, 42)
    trial = reference.trial(7)
    assert references.reference(ADD, CPU_DEVICE, 42) is reference
    assert reference.trial(7) is trial
    assert references.reference(ADD, CPU_DEVICE, 43) is not reference
    torch.testing.assert_close(trial.expected.refs[0], trial.inputs[0] + trial.inputs[1], rtol=0, atol=0)


def test_a_reference_whose_state_changes_when_it_runs_is_rebuilt_every_time() -> None:
    references = References()
    reference = references.reference(BATCH_NORM, CPU_DEVICE, 42)
    reference.trial(1)  # updates the running statistics
    rebuilt = references.reference(BATCH_NORM, CPU_DEVICE, 42)
    assert rebuilt is not reference
    assert references.reference(BATCH_NORM, CPU_DEVICE, 42) is not rebuilt
    assert rebuilt.keep_trials == 0


def test_secret_seeds_are_distinct_and_retire_after_their_uses() -> None:
    references = References(secret_pool=4, secret_uses=3)
    seen: list[list[int]] = [references.secret_seeds(ADD, CPU_DEVICE, 2) for _ in range(6)]
    assert all(len(set(s)) == 2 for s in seen)
    uses: dict[int, int] = {}
    for seeds in seen:
        for seed in seeds:
            uses[seed] = uses.get(seed, 0) + 1
    assert max(uses.values()) <= 3
    # 12 draws from a pool of 4 with 3 uses each: the pool had to be refreshed at least once.
    assert len(uses) >= 4
    other = references.secret_seeds(BATCH_NORM, CPU_DEVICE, 2)
    assert not set(other) & set(uses)


def test_call_digest_is_over_the_arguments_as_given() -> None:
    flags = ["-O3"]
    before = call_digest(("ext",), {"cpp_sources": "int f();", "extra_ldflags": flags})
    assert before == call_digest(("ext",), {"extra_ldflags": ["-O3"], "cpp_sources": "int f();"})
    flags.append("-ltorch")  # what load_inline does to the lists it is given
    assert call_digest(("ext",), {"cpp_sources": "int f();", "extra_ldflags": flags}) != before


@pytest.mark.parametrize("library", ["/etc/passwd", "../other/x.so", ""])
def test_a_prebuilt_entry_outside_the_build_dir_is_refused(library: str) -> None:
    assert Prebuilt.from_json({"digest": "d", "library": library}) is None


def test_an_unrecorded_call_builds_and_a_recorded_one_with_no_library_builds_too(tmp_path: Path) -> None:
    built: list[str] = []

    def build(*args: object, **kwargs: object) -> str:
        built.append(str(args[0]))
        return "built"

    recorded = Prebuilt(call_digest(("known",), {}), "known/known.so", True)
    load_inline = importing([recorded], tmp_path, build)
    assert load_inline("other") == "built"
    assert load_inline("known") == "built"  # recorded, but its library is not there
    assert built == ["other", "known"]
