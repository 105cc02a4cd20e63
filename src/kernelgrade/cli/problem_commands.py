"""`kernelgrade problems list|show|audit`."""

from __future__ import annotations

import argparse
import time
from typing import TYPE_CHECKING

from kernelgrade.problems import Problem, ProblemFormatError, builtin_problems, resolve_problem

if TYPE_CHECKING:
    import torch

    from kernelgrade.problems.audit import AuditFinding

EXIT_OK, EXIT_FINDINGS, EXIT_USAGE = 0, 1, 2


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = commands.add_parser("problems", help="list, show and audit problems")
    sub = parser.add_subparsers(dest="problems_command", metavar="ACTION", required=True)
    listing = sub.add_parser("list", help="list the built-in problems")
    listing.add_argument("--suite", default=None)
    listing.set_defaults(handler=_list)
    show = sub.add_parser("show", help="show one problem (a built-in name or a file)")
    show.add_argument("problem")
    show.set_defaults(handler=_show)
    audit = sub.add_parser("audit", help="run problems' references and flag degenerate problems")
    audit.add_argument("problems", nargs="*", metavar="NAME",
                       help="built-in names or problem files (default: every built-in problem)")
    audit.add_argument("--suite", default=None, help="only problems of this suite")
    audit.add_argument("--device", default=None, help="cpu, cuda or cuda:N (default: each problem's own)")
    audit.add_argument("--seeds", type=int, default=3, help="seeds to run each reference on (at least 2)")
    audit.set_defaults(handler=_audit)
    _register_import(sub)


def _register_import(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """`problems import` writes to the database, so it needs the `service` extra; absent without it."""
    import importlib

    try:
        service_commands = importlib.import_module("kernelgrade.cli.service_commands")
    except ImportError:
        return
    imported = sub.add_parser("import", help="import a folder of KernelBench-format problems into the database")
    service_commands.add_import_arguments(imported)


def _list(args: argparse.Namespace) -> int:
    problems = [p for p in builtin_problems() if args.suite in (None, p.suite)]
    width = max((len(p.name) for p in problems), default=4)
    print(f"{'name':<{width}}  {'suite':<10} {'device':<6} {'precision':<9} GFLOP")
    for p in problems:
        gflop = f"{p.flops / 1e9:.2f}" if p.flops else "-"
        print(f"{p.name:<{width}}  {p.suite:<10} {p.device.value:<6} {p.precision.kind.value:<9} {gflop}")
    return 0


def _show(args: argparse.Namespace) -> int:
    try:
        problem = resolve_problem(args.problem)
    except ProblemFormatError as exc:
        print(f"error: {exc}")
        return 2
    print(f"name:      {problem.name}\nsuite:     {problem.suite} (level {problem.level})")
    print(f"device:    {problem.device.value}\nprecision: {problem.precision.describe()}")
    print(f"flops:     {problem.flops}\nbytes:     {problem.bytes_moved}\nhash:      {problem.content_hash}")
    print(f"\n{problem.source}")
    return 0


def _audit(args: argparse.Namespace) -> int:
    """Exit 0 when no problem has a failing finding, 1 when one has (or its reference does not run)."""
    try:
        problems = _selected(args.problems, args.suite)
        forced = _device_arg(args.device)
    except (ProblemFormatError, ValueError) as exc:
        print(f"error: {exc}")
        return EXIT_USAGE
    if args.seeds < 2:
        print("error: --seeds must be at least 2")
        return EXIT_USAGE
    width = max((len(p.name) for p in problems), default=4)
    outcomes = [_audit_one(p, forced, args.seeds, width) for p in problems]
    counts = {o: outcomes.count(o) for o in ("ok", "warn", "fail", "skipped")}
    print(f"\n{len(problems)} problems: " + ", ".join(f"{n} {o}" for o, n in counts.items()))
    return EXIT_FINDINGS if counts["fail"] else EXIT_OK


def _selected(names: list[str], suite: str | None) -> list[Problem]:
    problems = [resolve_problem(n) for n in names] if names else builtin_problems()
    chosen = [p for p in problems if suite in (None, p.suite)]
    if not chosen:
        raise ProblemFormatError(f"no problems match (suite {suite!r})" if suite else "no problems to audit")
    return chosen


def _device_arg(device: str | None) -> torch.device | None:
    import torch

    if device is None:
        return None
    kind, colon, index = device.partition(":")
    if device != "cpu" and (kind != "cuda" or (colon and not index.isdigit())):
        raise ValueError(f"unknown device {device!r}; use cpu, cuda or cuda:N")
    chosen = torch.device(device)
    if chosen.type == "cuda" and (chosen.index or 0) >= torch.cuda.device_count():
        raise ValueError(f"{device} is not a visible CUDA device on this machine")
    return chosen


def _audit_one(problem: Problem, forced: torch.device | None, seeds: int, width: int) -> str:
    """Audit one problem and print its line; return its outcome: ok, warn, fail or skipped."""
    import torch

    from kernelgrade.problems.audit import audit_problem

    device = forced or _own_device(problem)
    if device is None:
        print(f"{problem.name:<{width}}  skipped: needs a CUDA device (--device cpu runs it on the CPU)")
        return "skipped"
    started = time.monotonic()
    try:
        findings = audit_problem(problem, device, seeds)
    except Exception as exc:  # a reference that does not run is the audit's finding, not the command's crash
        print(f"{problem.name:<{width}}  FAIL  the reference does not run on {device}: {type(exc).__name__}: {exc}")
        return "fail"
    finally:
        if device.type == "cuda":
            torch.cuda.empty_cache()
    print(f"{problem.name:<{width}}  {_outcome(findings).upper():<4}  ({time.monotonic() - started:.1f} s on {device})")
    for finding in findings:
        print(f"{'':<{width}}    [{finding.severity.value}] {finding.code}: {finding.message}")
    return _outcome(findings)


def _own_device(problem: Problem) -> torch.device | None:
    import torch

    if problem.device.value == "cpu":
        return torch.device("cpu")
    return torch.device("cuda", 0) if torch.cuda.is_available() else None


def _outcome(findings: list[AuditFinding]) -> str:
    severities = {f.severity.value for f in findings}
    return "fail" if "fail" in severities else "warn" if severities else "ok"
