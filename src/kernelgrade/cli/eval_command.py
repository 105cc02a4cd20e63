"""`kernelgrade eval PROBLEM SUBMISSION`: grade locally, no server. Exit 0 only for `correct`
(and fast enough with --min-speedup), 1 for a failing verdict, 2 for a usage or grader error."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Protocol, TextIO

from kernelgrade.cli.report import junit_xml, result_warnings, verdict_table

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = commands.add_parser("eval", help="grade a submission locally (no server)")
    parser.add_argument("problem", help="a built-in problem name or a problem file")
    parser.add_argument("submission", type=Path, help="the Python file defining ModelNew")
    parser.add_argument("--json", action="store_true", help="print the full result as JSON")
    parser.add_argument("--junit", type=Path, metavar="FILE", help="also write a JUnit XML report")
    parser.add_argument("--min-speedup", type=float, default=None, metavar="X",
                        help="exit 1 unless the speedup is at least X")
    parser.add_argument("--device", default=None, help="cpu, cuda or cuda:N (default: the problem's)")
    parser.add_argument("--no-timing", action="store_true", help="check correctness only")
    parser.add_argument("--quick", action="store_true", help="cap each timing phase at 3 s (smoke tests)")
    parser.add_argument("--compiled-baseline", action="store_true",
                        help="also time torch.compile of the reference and report the speedup against it"
                             " (adds an inductor compile, up to minutes)")
    parser.add_argument("--sandbox", default=None, help="auto, bwrap, unshare or none (default: settings)")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from kernelgrade.cli.grading import GradingError, grade_file

    try:
        result = grade_file(args.problem, args.submission, device=args.device, timing=not args.no_timing,
                            quick=args.quick, sandbox=args.sandbox, progress=ProgressLine(sys.stderr),
                            compiled_baseline=args.compiled_baseline)
    except GradingError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    warnings = result_warnings(result)
    for warning in warnings:
        print(f"warning: {warning}", file=sys.stderr)
    print(json.dumps({**result.to_json_dict(), "warnings": warnings}, indent=2) if args.json
          else verdict_table(result, str(args.submission)))
    if args.junit:
        args.junit.write_text(junit_xml(result, str(args.submission), args.min_speedup))
    return exit_code(result.verdict.value, result.speedup, args.min_speedup)


def exit_code(verdict: str, speedup: float | None, min_speedup: float | None) -> int:
    if verdict == "error":
        return EXIT_USAGE
    if verdict != "correct":
        return EXIT_FAILED
    if min_speedup is not None and (speedup is None or speedup < min_speedup):
        return EXIT_FAILED
    return EXIT_OK


class ShownProgress(Protocol):
    """What a progress line shows: the evaluator's Progress (`eval`) or the API's ProgressOut (`submit --wait`)."""

    @property
    def stage(self) -> str: ...
    @property
    def message(self) -> str: ...
    @property
    def done(self) -> int: ...
    @property
    def total(self) -> int: ...


class ProgressLine:
    """Live progress on stderr: rewritten in place on a terminal, one line per change otherwise."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.tty = stream.isatty()
        self.last = ""

    def __call__(self, progress: ShownProgress) -> None:
        stage, done, total = str(progress.stage), progress.done, progress.total
        text = f"[{stage}] {progress.message}" + (f" {done}/{total}" if total else "")
        if text == self.last:
            return
        self.last = text
        if self.tty:
            self.stream.write("\r\033[K" + text + ("\n" if stage == "timing" and done == total and total else ""))
        else:
            self.stream.write(text + "\n")
        self.stream.flush()
