"""The run child's own checks, exercised in-process: the guard on rebound names, tensor realness and
fingerprints, torch modes, fresh per-rep inputs, the output keeper and the per-rep clock check."""

from __future__ import annotations

import math
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode

from kernelgrade.evaluator import timing
from kernelgrade.evaluator.child import run_child
from kernelgrade.evaluator.integrity import tensor_checks
from kernelgrade.evaluator.integrity.guard import Guard, is_clock
from kernelgrade.evaluator.integrity.proctree import count_tree, tree_waited_ns
from kernelgrade.evaluator.integrity.tensor_checks import active_modes, fingerprint, inert, why_not_plain
from kernelgrade.evaluator.request import TimingParams
from kernelgrade.evaluator.wire import tensorfile
from kernelgrade.evaluator.wire.protocol import (
    CallRequest,
    Op,
    ReadSetsRequest,
    ReadyRequest,
    TimedOutputsRequest,
    TimeRequest,
    WarmupRequest,
)

FEW_REPS = TimingParams(warmup_calls=1, warmup_ms=0.0, min_reps=5, max_reps=5, input_sets=2, flush_bytes=1 << 20)


@pytest.fixture
def guard() -> Guard:
    return Guard.take()


def test_guard_sees_rebound_functions_code_and_added_methods(guard: Guard, monkeypatch: pytest.MonkeyPatch) -> None:
    assert guard.rebound() == []
    monkeypatch.setattr(time, "perf_counter", lambda: 0.0)
    monkeypatch.setattr(torch.Tensor, "sum", lambda *a, **k: 0, raising=False)
    monkeypatch.setattr(timing.Flusher.flush, "__code__", (lambda self: None).__code__)
    rebound = guard.rebound()
    assert "time.perf_counter" in rebound
    assert "torch.Tensor.sum (added)" in rebound
    assert "kernelgrade.evaluator.timing.Flusher.flush" in rebound
    assert is_clock("time.perf_counter") and is_clock("kernelgrade.evaluator.timing.Flusher.flush")
    assert not is_clock("builtins.isinstance")


def test_guard_ignores_what_torch_rebinds_itself(guard: Guard, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(torch, "manual_seed", lambda seed: None)  # torch.compile's first use does this
    assert guard.rebound() == []


def test_plain_tensors_pass_and_lookalikes_do_not() -> None:
    class Sub(torch.Tensor):
        pass

    plain = torch.ones(4, 4)
    assert why_not_plain(plain) == "" and why_not_plain(plain.t()) == "" and why_not_plain(torch.ones(0)) == ""
    assert "Sub" in why_not_plain(plain.as_subclass(Sub))
    assert "layout" in why_not_plain(plain.to_sparse())
    assert "meta" in why_not_plain(torch.ones(3, device="meta"))
    assert "lazy" in why_not_plain(torch.ones(3, dtype=torch.complex64).conj())
    assert "lazy" in why_not_plain(torch._efficientzerotensor(3))
    assert why_not_plain([plain]) != ""


def test_fingerprints_are_exact_and_stable_with_nan() -> None:
    x = torch.randn(1000)
    x[3] = float("nan")
    assert fingerprint(x) == fingerprint(x.clone())
    y = x.clone()
    y.view(torch.int32)[500] ^= 1  # one bit
    assert fingerprint(y) != fingerprint(x)
    assert fingerprint(x[::2]) == fingerprint(x[::2].contiguous())
    assert fingerprint(torch.ones(3, dtype=torch.bool)) == 3
    assert fingerprint("not a tensor") == 0


def test_a_fingerprint_summed_in_chunks_is_the_whole_sum_and_sees_the_last_chunk(
        monkeypatch: pytest.MonkeyPatch) -> None:
    values = torch.randn(1001)  # 1001 words: chunks of 64 and a short last one
    whole = fingerprint(values)
    monkeypatch.setattr(tensor_checks, "FINGERPRINT_CHUNK", 64)
    assert fingerprint(values) == whole
    odd = torch.arange(1003, dtype=torch.uint8)  # not whole words: summed as bytes, in chunks too
    assert fingerprint(odd) == int(odd.sum(dtype=torch.int64))
    values[-1] = torch.nextafter(values[-1], torch.tensor(math.inf))
    assert fingerprint(values) != whole


def test_a_dispatch_mode_is_seen_and_switched_off_for_the_harness() -> None:
    calls = []

    class Spy(TorchDispatchMode):  # type: ignore[no-untyped-call]
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
            calls.append(func)
            return func(*args, **(kwargs or {}))

    x = torch.ones(8)
    with Spy():  # type: ignore[no-untyped-call]
        assert active_modes() == ["1 torch-dispatch mode(s)"]
        with inert():
            fingerprint(x)
        assert calls == []
        x.sum()
        assert calls
    assert active_modes() == []


def test_every_rep_gets_fresh_values_the_judge_can_reproduce() -> None:
    sets: list[list[Any]] = [[torch.randn(64, 64), torch.randint(0, 4, (64, 64)).float(), 3],
                             [torch.randn(64, 64), torch.ones(8), 3]]
    rotation = timing.InputRotation(sets)
    assert rotation.which == [[True, False, False], [True, False, False]]
    draws = [rotation.draw() for _ in range(50)]
    assert len({(tag, float(args[0][0, 0])) for args, tag in draws}) > 40
    for args, (index, step) in draws[:5]:
        again = timing.scaled_inputs(sets[index], step, timing.InputRotation(sets).which[index])
        assert torch.equal(args[0], again[0]) and torch.equal(args[1], sets[index][1]) and args[2] == 3
        assert 0.875 <= timing.scale_factor(step) < 1.0


def test_keeper_keeps_the_last_of_each_set_and_a_sample() -> None:
    keeper = timing.OutputKeeper(sampled=2)
    for rep in range(30):
        keeper.keep(rep, (rep % 3, rep + 1), torch.full((4,), float(rep)))
    kept = keeper.kept()
    assert {27, 28, 29} <= {e.rep for e in kept} and len(kept) <= 5
    assert all(e.at_return == [fingerprint(torch.full((4,), float(e.rep)))] for e in kept)


def test_a_clock_rebound_inside_a_rep_is_counted(monkeypatch: pytest.MonkeyPatch) -> None:
    real = timing._perf_counter_ns

    def sneaky(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        monkeypatch.setattr(timing, "_perf_counter_ns", lambda: real() - 1)
        return a + b

    flusher = timing.Flusher(torch.device("cpu"), FEW_REPS.flush_bytes)
    sets = [[torch.randn(8), torch.randn(8)]]
    honest = timing.measure(lambda a, b: a + b, sets, torch.device("cpu"), FEW_REPS, flusher)
    assert honest.tampered_reps == 0 and timing.clock_intact()
    cheated = timing.measure(sneaky, sets, torch.device("cpu"), FEW_REPS, flusher)
    assert cheated.tampered_reps == 5


def test_proc_tree_counts_threads_and_processes() -> None:
    code = ("import os, threading, time\n"
            "for _ in range(3): threading.Thread(target=time.sleep, args=(5,), daemon=True).start()\n"
            "pid = os.fork()\n"
            "if pid: print('ready', flush=True)\n"
            "time.sleep(5)\n")
    child = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, start_new_session=True)
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == b"ready"
        count = count_tree(child.pid)
        assert count is not None and count.processes == 2 and count.threads >= 5
    finally:
        os.killpg(child.pid, signal.SIGKILL)  # the session this test started: the child and its fork
        child.wait()
        assert child.stdout is not None
        child.stdout.close()
    assert count_tree(child.pid) is None


def _spinner(cpu: int) -> subprocess.Popen[bytes]:
    code = f"import os; os.sched_setaffinity(0, {{{cpu}}}); print('ready', flush=True)\nwhile True: pass"
    spinner = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, start_new_session=True)
    assert spinner.stdout is not None and spinner.stdout.readline().strip() == b"ready"
    return spinner


def _stop(*spinners: subprocess.Popen[bytes]) -> None:
    for spinner in spinners:
        os.killpg(spinner.pid, signal.SIGKILL)
        spinner.wait()
        assert spinner.stdout is not None
        spinner.stdout.close()


def test_both_readings_of_a_threads_wait_for_a_cpu_see_two_busy_processes_on_one_cpu() -> None:
    """Two processes spinning on one CPU each wait about half the time: the judge's reading of a child's tree
    (proctree.tree_waited_ns) and the timing thread's own (timing._waited_ns) both show it."""
    cpu = min(os.sched_getaffinity(0))
    first, second = _spinner(cpu), _spinner(cpu)
    try:
        before = tree_waited_ns(first.pid)
        time.sleep(0.5)
        after = tree_waited_ns(first.pid)
    finally:
        _stop(first, second)
    assert before is not None and after is not None and after - before > 100_000_000  # of about 250 ms
    own, allowed = timing._open_schedstat(), os.sched_getaffinity(0)
    competitor = _spinner(cpu)
    try:
        os.sched_setaffinity(0, {cpu})
        waited, started = timing._waited_ns(own), time.perf_counter()
        while time.perf_counter() - started < 0.3:
            pass
        waited = timing._waited_ns(own) - waited
    finally:
        os.sched_setaffinity(0, allowed)
        _stop(competitor)
        if own is not None:
            os.close(own)
    assert waited > 50_000_000  # of about 150 ms


def test_call_sees_an_output_written_while_it_is_saved(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Work that wakes only after the settle wait (a descheduled process on a busy host) and writes while the
    output file is written is still reported as a change after return."""
    harness = run_child.Harness()
    harness.model = lambda a, b: a + b
    inputs = tmp_path / "in.kgt"
    tensorfile.save(inputs, [torch.ones(16), torch.ones(16)])
    request = CallRequest(inputs, tmp_path / "out.kgt", settle_s=0.0)
    assert harness.call(request).changed_after_return is False
    real_save = tensorfile.save

    def written_late(path: Path, values: list[Any]) -> None:
        values[0].add_(1.0)
        real_save(path, values)

    monkeypatch.setattr(run_child.tensorfile, "save", written_late)
    assert harness.call(request).changed_after_return is True


def test_the_child_hands_its_cache_back_after_a_call_but_not_before_timed_reps(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """After a checked call the judge compares on the same device: what the call freed goes back to the driver.
    Ops that come before timed reps keep theirs, so the reps do not pay for allocating it again."""
    handed_back: list[torch.device] = []

    def leave_room(device: torch.device) -> int:
        handed_back.append(device)
        return 0

    monkeypatch.setattr(run_child, "leave_room", leave_room)
    harness = run_child.Harness()
    harness.model = lambda a: a * 2
    inputs = tmp_path / "in.kgt"
    tensorfile.save(inputs, [torch.ones(16)])
    reply, _seconds = harness.handle(CallRequest(inputs, tmp_path / "out.kgt", settle_s=0.0))
    assert not isinstance(reply, run_child.Refusal)
    assert handed_back == [torch.device("cpu")]
    harness.handle(ReadyRequest())
    assert handed_back == [torch.device("cpu")]
    assert Op.WARMUP not in run_child.HANDS_BACK_CACHE and {Op.CALL, Op.TIME} <= run_child.HANDS_BACK_CACHE


def test_a_keeper_that_retains_nothing_still_fingerprints_every_output(monkeypatch: pytest.MonkeyPatch) -> None:
    """The reference's child keeps no timed outputs (nothing re-checks them) but pays the same per-rep cost."""
    fingerprinted: list[int] = []
    real = timing.fingerprints
    monkeypatch.setattr(timing, "fingerprints", lambda outs: fingerprinted.append(len(outs)) or real(outs))
    keeper = timing.OutputKeeper(sampled=2, retain=False)
    for rep in range(6):
        keeper.keep(rep, (rep % 2, 1), torch.full((4,), float(rep)))
    assert keeper.kept() == [] and fingerprinted == [1] * 6


def _timed_harness(tmp_path: Path, keeps_sets: bool = True) -> tuple[run_child.Harness, WarmupRequest]:
    """A harness on the CPU, keeping sets read from the same files as it does on a GPU unless `keeps_sets` is
    False, as on the CPU."""
    harness = run_child.Harness()
    harness.keeps_sets = keeps_sets
    harness.model = lambda a: a * 2
    paths = [tmp_path / f"set_{k}.kgt" for k in range(2)]
    for path in paths:
        tensorfile.save(path, [torch.randn(64)])
    return harness, WarmupRequest(tuple(paths), FEW_REPS, FEW_REPS.flush_bytes)


def test_a_phase_timed_without_keeping_outputs_leaves_none_to_re_check(tmp_path: Path) -> None:
    harness, warmup = _timed_harness(tmp_path)
    harness.warmup(warmup)
    harness.time(TimeRequest(FEW_REPS, keep_outputs=False))
    assert harness.timed_outputs(TimedOutputsRequest(tmp_path)).kept == 0
    harness.time(TimeRequest(FEW_REPS))
    assert harness.timed_outputs(TimedOutputsRequest(tmp_path)).kept >= 2


def _reads(harness: run_child.Harness, monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """Each set read from then on, as whether the harness still held earlier sets or kept outputs meanwhile."""
    held_while_reading: list[bool] = []
    real = run_child.Harness._inputs

    def spy(self: run_child.Harness, path: Path) -> list[Any]:
        held_while_reading.append(self.rotation is not None or self.keeper is not None)
        return real(self, path)

    monkeypatch.setattr(run_child.Harness, "_inputs", spy)
    return held_while_reading


def test_a_second_warm_up_on_the_same_set_files_keeps_the_sets(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                                               ) -> None:
    """The reference's child is warmed up before and after the candidate on the same files: reading them again
    copied every set through a file and onto the device."""
    harness, warmup = _timed_harness(tmp_path)
    reads = _reads(harness, monkeypatch)
    harness.warmup(warmup)
    sets = harness.rotation.sets if harness.rotation else None
    harness.time(TimeRequest(FEW_REPS))
    harness.warmup(warmup)
    assert reads == [False, False]
    assert harness.rotation is not None and harness.rotation.sets is sets and harness.keeper is None
    assert not harness.tampered_state


def test_on_the_cpu_every_warm_up_reads_the_sets_as_the_candidates_child_does(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    harness, warmup = _timed_harness(tmp_path, keeps_sets=False)
    reads = _reads(harness, monkeypatch)
    harness.warmup(warmup)
    harness.time(TimeRequest(FEW_REPS))
    harness.warmup(warmup)
    assert reads == [False] * 4


def test_a_second_warm_up_on_new_set_files_lets_go_of_the_first_phases_sets_before_reading(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A kept reference child gets the next evaluation's sets under the same names. Holding the first phase's
    sets and kept outputs through the read doubled its memory on KernelBench's largest problems."""
    harness, warmup = _timed_harness(tmp_path)
    reads = _reads(harness, monkeypatch)
    harness.warmup(warmup)
    harness.time(TimeRequest(FEW_REPS))
    for path in warmup.input_sets:
        written = os.stat(path).st_mtime_ns
        os.unlink(path)
        tensorfile.save(path, [torch.full((64,), 3.0)])
        # The next evaluation's sets are written seconds later; here the file system's clock may not have
        # moved on, and a new file can get the old one's inode.
        os.utime(path, ns=(written + 10**9, written + 10**9))
    harness.warmup(warmup)
    assert reads == [False, False, False, False]
    assert harness.rotation is not None and float(harness.rotation.sets[0][0][0]) == 3.0


@pytest.mark.parametrize("ahead", [False, True], ids=["after_a_warm_up", "read_ahead"])
def test_sets_changed_in_memory_are_read_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, ahead: bool) -> None:
    harness, warmup = _timed_harness(tmp_path)
    reads = _reads(harness, monkeypatch)
    if ahead:
        harness.read_sets(ReadSetsRequest(warmup.input_sets))
    else:
        harness.warmup(warmup)
    assert harness.rotation is not None
    kept = harness.rotation.sets[1][0].clone()
    harness.rotation.sets[1][0].add_(1.0)
    harness.warmup(warmup)
    assert len(reads) == 4 and torch.equal(harness.rotation.sets[1][0], kept)


def test_sets_read_ahead_are_kept_by_the_warm_up_on_the_same_files(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """The reference's child reads them while the candidate's trials run: its warm-up at timing reads nothing."""
    harness, warmup = _timed_harness(tmp_path)
    reads = _reads(harness, monkeypatch)
    harness.read_sets(ReadSetsRequest(warmup.input_sets))
    assert harness.rotation is not None
    sets = harness.rotation.sets
    harness.warmup(warmup)
    harness.time(TimeRequest(FEW_REPS))
    assert reads == [False, False] and harness.rotation.sets is sets and not harness.tampered_state
