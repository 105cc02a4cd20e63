"""`kernelgrade problems list|show`."""

from __future__ import annotations

import argparse
from pathlib import Path

from kernelgrade.problems import (
    Problem,
    ProblemFormatError,
    builtin_problems,
    find_builtin,
    load_problem_file,
)


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = commands.add_parser("problems", help="list and show problems")
    sub = parser.add_subparsers(dest="problems_command", metavar="ACTION", required=True)
    listing = sub.add_parser("list", help="list the built-in problems")
    listing.add_argument("--suite", default=None)
    listing.set_defaults(handler=_list)
    show = sub.add_parser("show", help="show one problem (a built-in name or a file)")
    show.add_argument("problem")
    show.set_defaults(handler=_show)


def resolve_problem(name_or_path: str) -> Problem:
    """A built-in problem by name, or a problem file by path."""
    path = Path(name_or_path)
    if path.suffix == ".py" or path.exists():
        if not path.is_file():
            raise ProblemFormatError(f"no problem file at {path}")
        return load_problem_file(path)
    found = find_builtin(name_or_path)
    if found is None:
        names = ", ".join(p.name for p in builtin_problems())
        raise ProblemFormatError(f"no built-in problem named {name_or_path!r}; known: {names}")
    return found


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
