"""protocol_compare.py --under-load: the same small kernels and built-in problems timed on a quiet host and
with every core busy, in one run, beside KernelBench's protocol on the quiet host.

Conditions, each over every case (reference and, for the small kernels, the hand-written kernel):
- quiet: kernelgrade's loop (the stream held until each rep is enqueued), nothing else running;
- before: load on every core, the loop without the hold and with no core of its own, as the service timed
  until the hold (the flush covers the host's dispatch only while the host keeps up);
- held: load on every core, the stream held, no core of its own;
- ours: load on the cores worker/cores.py leaves to builds, the loop held and on the judge's cores, as the
  service runs now;
- kb quiet / kb loaded: KernelBench's loop (synchronize, flush, start event, call, end event) on the quiet
  host and under the load of `before`.
Prints each case's medians, the kernels' speedups per condition with their distance from quiet and from
KernelBench quiet, and the reps that may hold host time. Asserts nothing.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch

from host_load import host_load
from kernelgrade.evaluator import timing
from kernelgrade.evaluator.host import hold_watch
from kernelgrade.evaluator.request import TimingParams
from kernelgrade.evaluator.sandbox.cpus import on_cpus
from kernelgrade.worker.cores import available_cpus, plan_cores
from protocol_compare import kernelbench_mean

Call = Callable[..., Any]
CONDITIONS = ("quiet", "before", "held", "ours", "kb_quiet", "kb_loaded")


@dataclass(frozen=True)
class Case:
    name: str
    reference: Call
    kernel: Call | None  # None: a built-in problem, timed on its reference alone
    args: list[Any]


@dataclass(frozen=True)
class Measured:
    median_ms: float
    host_bound: int = 0
    reps: int = 0


Results = dict[tuple[str, str, str], Measured]  # (case, "reference" | "kernel", condition) -> measurement


def ours(fn: Call, args: list[Any], device: torch.device, params: TimingParams, hold: bool) -> Measured:
    """The judge's own loop: held on the judge's page, which its watch releases if a call waits for the device."""
    flusher = timing.Flusher(device, params.flush_bytes or timing.default_flush_bytes(device))
    timing.device_hold(device, hold_watch.own_page())
    holding = timing.Holding.for_device(device, hold)
    with torch.no_grad(), hold_watch.watch().watching(hold_watch.own_page()):
        timing.warm_up(fn, [args], device, params, holding=holding)
        raw = timing.measure(fn, [args], device, params, flusher, holding=holding)
    return Measured(statistics.median(raw.device_ms), raw.host_bound_reps, len(raw.device_ms))


def kernelbench(fn: Call, args: list[Any], device: torch.device) -> Measured:
    with torch.no_grad():
        return Measured(kernelbench_mean(fn, args, device))


def sides(case: Case) -> list[tuple[str, Call]]:
    return [("reference", case.reference)] + ([("kernel", case.kernel)] if case.kernel is not None else [])


def run(cases: Sequence[Case], device: torch.device, params: TimingParams, condition: str, results: Results,
        cpus: Sequence[int] = ()) -> None:
    with on_cpus(cpus):
        for case in cases:
            for side, fn in sides(case):
                if condition.startswith("kb_"):
                    results[case.name, side, condition] = kernelbench(fn, case.args, device)
                else:
                    results[case.name, side, condition] = ours(fn, case.args, device, params, condition != "before")
            print(f"#   {condition}: {case.name}", flush=True)


def compare(cases: Sequence[Case], device: torch.device, params: TimingParams, load: str) -> Results:
    results: Results = {}
    everywhere = available_cpus()
    plan = plan_cores(-1, 1, everywhere)
    run(cases, device, params, "quiet", results)
    run(cases, device, params, "kb_quiet", results)
    with host_load(load, everywhere) as what:
        print(f"# load: {what}", flush=True)
        for condition in ("before", "held", "kb_loaded"):
            run(cases, device, params, condition, results)
    if not plan.builds:
        print(f"# no core placement on this host ({plan.why}); 'ours' is 'held'")
        for (case, side, condition), value in list(results.items()):
            if condition == "held":
                results[case, side, "ours"] = value
        return results
    with host_load(load, plan.builds) as what:
        print(f"# load: {what}; measuring on CPUs {plan.measure[0]}", flush=True)
        run(cases, device, params, "ours", results, plan.measure[0])
    return results


def print_tables(cases: Sequence[Case], results: Results) -> None:
    print(f"{'case':<26} {'side':<9}" + "".join(f" {c:>10}" for c in CONDITIONS) + f" {'hostb bef':>9}"
          f" {'hostb ours':>10}   (median ms; kb: mean ms)")
    for case in cases:
        for side, _ in sides(case):
            row = [results[case.name, side, c] for c in CONDITIONS]
            print(f"{case.name:<26} {side:<9}" + "".join(f" {m.median_ms:>10.4f}" for m in row)
                  + f" {row[1].host_bound:>4}/{row[1].reps:<4} {row[3].host_bound:>5}/{row[3].reps:<4}")
    kernels = [c for c in cases if c.kernel is not None]
    if not kernels:
        return
    print()
    print(f"{'kernel speedup':<26}" + "".join(f" {c:>10}" for c in CONDITIONS)
          + f" {'ours/quiet':>10} {'ours/kbq':>9} {'bef/quiet':>9}")
    for case in kernels:
        x = {c: results[case.name, "reference", c].median_ms / results[case.name, "kernel", c].median_ms
             for c in CONDITIONS}
        print(f"{case.name:<26}" + "".join(f" {x[c]:>10.3f}" for c in CONDITIONS)
              + f" {_pct(x['ours'], x['quiet']):>10} {_pct(x['ours'], x['kb_quiet']):>9}"
                f" {_pct(x['before'], x['quiet']):>9}")


def _pct(ours_value: float, theirs: float) -> str:
    return f"{100.0 * (ours_value / theirs - 1.0):+.1f}%"
