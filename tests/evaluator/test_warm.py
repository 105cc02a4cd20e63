"""What a long-lived judge keeps: warm run children, kept references, the secret seed pool, prebuilt imports."""

from __future__ import annotations

import gc
import os
import subprocess
import sys
import threading
import time
import weakref
from pathlib import Path

import pytest
import torch

from kernelgrade.evaluator import ProblemSpec
from kernelgrade.evaluator.codec import Codec, DecodeError
from kernelgrade.evaluator.host import run_children
from kernelgrade.evaluator.host.reference import Footprint
from kernelgrade.evaluator.host.reference_cache import References
from kernelgrade.evaluator.host.run_children import ChildKind, RunChildren
from kernelgrade.evaluator.integrity.tensor_checks import fingerprints
from kernelgrade.evaluator.request import DeviceKind
from kernelgrade.evaluator.rounding import Rounding
from kernelgrade.evaluator.sandbox.launcher import ChildSpec, SubprocessLauncher
from kernelgrade.evaluator.wire.prebuilt import Prebuilt, call_digest, importing

CPU = ChildKind(None, "cpu", ())
CPU_DEVICE = torch.device("cpu")
# A GPU child on a GPU host; here the same path runs with the device "cpu" (no CUDA needed to check the order).
GPU_LIKE = ChildKind(0, "cpu", ())

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


def _pages(fd: int) -> int:
    """The bytes of a region's file that have pages (st_blocks counts 512-byte units)."""
    return os.fstat(fd).st_blocks * 512


def test_spares_regions_get_their_pages_ahead_for_the_largest_recent_evaluation_of_their_kind(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(run_children, "POPULATE_MAX_BYTES", 4 << 20)
    children = RunChildren(SubprocessLauncher(), tmp_path / "work", spares=1)
    try:
        first = children.take(CPU, refill=False)  # started before any evaluation: nothing to go by
        assert _pages(first.region.fd) == 0
        for kind, size in ((CPU, 3 << 20), (CPU, 1 << 20), (GPU_LIKE, 2 << 20)):
            children.used_region(kind, size)
        children.refill(CPU)
        _wait_ready(children, CPU)
        spare = children.take(CPU, refill=False)
        assert _pages(spare.region.fd) == os.fstat(spare.region.fd).st_size == 3 << 20
        assert spare.region.reserved == 0  # nothing reserved, so nothing mapped by the judge yet
        children.used_region(CPU, 64 << 20)
        assert children._region_hint(CPU) == 4 << 20  # at most POPULATE_MAX_BYTES
        for _ in range(run_children.REGION_HINTS):
            children.used_region(CPU, 1 << 20)
        assert children._region_hint(CPU) == 1 << 20  # only the recent ones count
        first.close()
        spare.close()
    finally:
        children.close()


def test_a_child_taken_for_a_measurement_is_replaced_only_when_asked(tmp_path: Path) -> None:
    # The reference's child is taken just before the quiet lock, which a spare's start holds: replaced at once,
    # the measurement would wait for that start.
    children = RunChildren(SubprocessLauncher(), tmp_path / "work", spares=1)
    try:
        children.take(CPU).close()
        _wait_ready(children, CPU)
        taken = children.take(CPU, refill=False)
        time.sleep(0.5)
        assert children.ready(CPU) == 0 and not children._starting.get(CPU)
        children.refill(CPU)
        _wait_ready(children, CPU)
        taken.close()
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
        assert launcher.started_by[starting.work_dir].startswith("warm-children")
        starting.close()
    finally:
        children.close()


class PairedLauncher(SubprocessLauncher):
    """Starts a spare only once another spare's start has reached the same point: spares started one after
    another never get past it."""

    def __init__(self) -> None:
        super().__init__()
        self.pair = threading.Barrier(2, timeout=30)

    def popen(self, spec: ChildSpec) -> subprocess.Popen[bytes]:
        if threading.current_thread().name.startswith("warm-children"):
            self.pair.wait()
        return super().popen(spec)


def test_device_spares_start_side_by_side(tmp_path: Path) -> None:
    """(On the CPU the whole start waits for quiet(), so CPU spares start one at a time.)"""
    children = RunChildren(PairedLauncher(), tmp_path / "work", spares=2)
    try:
        children.take(GPU_LIKE).close()  # none waiting: started here, and two spares asked for
        deadline = time.monotonic() + 60
        while children.ready(GPU_LIKE) < 2:
            assert time.monotonic() < deadline, "the two spares did not both start"
            time.sleep(0.1)
    finally:
        children.close()


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
    assert reference.trial(7).expected.refs is trial.expected.refs and reference.trial(7).prepared == "kept"
    assert references.reference(ADD, CPU_DEVICE, 43) is not reference
    torch.testing.assert_close(trial.expected.refs[0], trial.inputs[0] + trial.inputs[1], rtol=0, atol=0)


def _add_problem(version: int) -> ProblemSpec:
    return ProblemSpec(f"add{version}", ADD.source, device=DeviceKind.CPU, content_hash=f"add-v{version}")


def test_a_stream_cycling_through_many_problems_keeps_them_all() -> None:
    references = References()
    problems = [_add_problem(v) for v in range(8)]
    first = [references.reference(p, CPU_DEVICE, 42) for p in problems]
    trials = [r.trial(1) for r in first]
    again = [references.reference(p, CPU_DEVICE, 42) for p in problems]
    assert all(a is b for a, b in zip(first, again, strict=True))
    assert all(r.trial(1).expected.refs is t.expected.refs for r, t in zip(again, trials, strict=True))


def test_the_least_recently_used_problem_makes_room_for_a_new_trial() -> None:
    one = References().reference(_add_problem(0), CPU_DEVICE, 42).trial(1)
    size = Footprint.of([*one.inputs, *one.expected.refs, *(one.expected.oracles or [])])
    references = References(budget=Footprint(0, 2 * size.host))
    old = references.reference(_add_problem(1), CPU_DEVICE, 42)
    old.trial(1)
    old.trial(2)
    new = references.reference(_add_problem(2), CPU_DEVICE, 42)
    kept = new.trial(1)
    assert new.trial(1).expected.refs is kept.expected.refs and new.kept == size
    assert references.reference(_add_problem(1), CPU_DEVICE, 42) is not old  # let go
    alone = References(budget=Footprint(0, size.host - 1)).reference(_add_problem(3), CPU_DEVICE, 42)
    assert alone.trial(1).expected.refs is not alone.trial(1).expected.refs  # larger than the budget: never kept


def test_a_let_go_problem_is_freed_at_once() -> None:
    """Nothing a kept trial holds leads back to its reference: such a cycle held every let-go problem's device
    memory until Python's next full garbage collection."""
    one = References().reference(_add_problem(0), CPU_DEVICE, 42).trial(1)
    size = Footprint.of([*one.inputs, *one.expected.refs, *(one.expected.oracles or [])])
    references = References(budget=Footprint(0, size.host + size.host // 2))
    old = references.reference(_add_problem(1), CPU_DEVICE, 42)
    assert old.trial(1).expected.rounded is not None  # the lower-precision emulations: where the cycle was
    gone = weakref.ref(old)
    gc.disable()
    try:
        del old
        references.reference(_add_problem(2), CPU_DEVICE, 42).trial(1)
        assert gone() is None
    finally:
        gc.enable()


def test_each_use_of_a_kept_trial_computes_its_own_emulations() -> None:
    """What an evaluation's comparison computes on rounded inputs is not kept with the trial: it would grow past
    the budget the trial was kept under."""
    reference = References().reference(ADD, CPU_DEVICE, 42)
    first = reference.trial(7)
    emulated = first.expected.rounded
    assert emulated is not None
    torch.testing.assert_close(emulated(Rounding.BF16)[0], first.expected.refs[0], rtol=1e-2, atol=1e-2)
    again = reference.trial(7).expected.rounded
    assert again is not None and again is not emulated and again.cache_info().currsize == 0  # type: ignore[attr-defined]


def _running_out(times: int) -> ProblemSpec:
    """A reference that runs the device out of memory on its first `times` calls, after writing into its input."""
    return ProblemSpec(f"oom{times}", f"""
import torch
calls = [0]
class Model(torch.nn.Module):
    def forward(self, a):
        calls[0] += 1
        if calls[0] <= {times}:
            a.mul_(0)
            raise torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 8.00 GiB.")
        return a * 2
def get_inputs():
    return [torch.randn(64)]
def get_init_inputs():
    return []
""", device=DeviceKind.CPU, content_hash=f"oom-v{times}")


def test_a_reference_out_of_device_memory_runs_again_once_other_problems_are_let_go() -> None:
    references = References()
    other = references.reference(ADD, CPU_DEVICE, 42)
    other.trial(1)
    trial = references.reference(_running_out(1), CPU_DEVICE, 42).trial(3)
    # Run again on fresh copies of the inputs: the failed call zeroed the ones it was given.
    torch.testing.assert_close(trial.expected.refs[0], trial.inputs[0] * 2, rtol=0, atol=0)
    assert references.reference(ADD, CPU_DEVICE, 42) is not other
    with pytest.raises(torch.cuda.OutOfMemoryError):  # twice: the grader's error, to be retried, not a verdict
        References().reference(_running_out(2), CPU_DEVICE, 42).trial(3)


def test_a_cpu_problem_does_not_let_go_of_problems_holding_device_memory() -> None:
    """A GPU judge grades CPU problems too; their trials are checked against host memory only."""
    one = References().reference(_add_problem(0), CPU_DEVICE, 42).trial(1)
    size = Footprint.of([*one.inputs, *one.expected.refs, *(one.expected.oracles or [])])
    references = References(budget=Footprint(0, 2 * size.host))
    on_gpu = references.reference(_add_problem(1), CPU_DEVICE, 42)
    on_gpu.kept = Footprint(device=1024**3)  # as a GPU problem's kept expected outputs would
    references.reference(_add_problem(2), CPU_DEVICE, 42).trial(1)
    assert references.reference(_add_problem(1), CPU_DEVICE, 42) is on_gpu


def _linear_problem(version: int) -> ProblemSpec:
    return ProblemSpec(f"linear{version}", """
import torch
class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(256, 256)
    def forward(self, x):
        return self.fc(x)
def get_inputs():
    return [torch.randn(4, 256)]
def get_init_inputs():
    return []
""", device=DeviceKind.CPU, content_hash=f"linear-v{version}")


def test_a_references_weights_count_against_the_budget() -> None:
    weights = (256 * 256 + 256) * 4
    references = References(budget=Footprint(0, weights + weights // 2))
    first = references.reference(_linear_problem(1), CPU_DEVICE, 42)
    references.reference(_linear_problem(2), CPU_DEVICE, 42)
    assert references.reference(_linear_problem(1), CPU_DEVICE, 42) is not first


def test_a_reference_too_large_for_the_budget_lets_nothing_go() -> None:
    references = References(budget=Footprint(0, (256 * 256 + 256) * 4 // 2))
    small = references.reference(_add_problem(1), CPU_DEVICE, 42)
    small.trial(1)
    large = references.reference(_linear_problem(1), CPU_DEVICE, 42)
    large.trial(1)
    assert references.reference(_add_problem(1), CPU_DEVICE, 42) is small
    assert references.reference(_linear_problem(1), CPU_DEVICE, 42) is not large


# A reference that writes into its input: what the child gets and the judge fingerprints must be the values
# get_inputs() made, and the oracle must see them too.
IN_PLACE = ProblemSpec("in_place", """
import torch
class Model(torch.nn.Module):
    def forward(self, x):
        x.mul_(2)
        return x + 1
def get_inputs():
    return [torch.randn(64)]
def get_init_inputs():
    return []
""", device=DeviceKind.CPU, content_hash="in-place-v1")


def test_a_reference_writing_into_its_inputs_changes_neither_the_kept_inputs_nor_the_oracle() -> None:
    reference = References().reference(IN_PLACE, CPU_DEVICE, 42)
    trial = reference.trial(3)
    made = reference.make_inputs(3)
    assert torch.equal(trial.inputs[0], made[0])
    assert trial.fingerprints == tuple(fingerprints(made))
    assert trial.expected.oracles is not None
    torch.testing.assert_close(trial.expected.oracles[0], made[0].double() * 2 + 1, rtol=0, atol=0)
    torch.testing.assert_close(trial.expected.refs[0], made[0] * 2 + 1, rtol=0, atol=0)


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
    with pytest.raises(DecodeError, match="inside the build dir"):
        Codec().decode(Prebuilt, {"digest": "d", "library": library})


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


def test_a_run_child_imports_cpp_extension_before_it_reports_ready() -> None:
    """Every load_inline submission needs torch.utils.cpp_extension; its import (0.56 s on an H100 host) belongs
    to a spare's start, not to the load stage that holds the device. The module is imported before the command
    loop answers `ready`; `import torch` alone does not bring it in."""
    probe = ("import sys, torch; before = 'torch.utils.cpp_extension' in sys.modules;"
             " import kernelgrade.evaluator.child.run_child;"
             " print(before, 'torch.utils.cpp_extension' in sys.modules)")
    # Importing torch on a loaded 2-core CI host takes seconds; two minutes is for a cold disk cache as well.
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=True)
    assert done.stdout.split() == ["False", "True"]
