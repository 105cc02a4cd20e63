"""Grade every KernelBench problem's own reference as a submission, through a real `kernelgrade serve`.

Each problem's `Model`, renamed `ModelNew`, is pure PyTorch and computes exactly the reference, so an honest
grader calls it correct at a speedup near 1x. A sweep finds the problems the grader cannot grade as given
(sizes past a limit, problems that do not run on the device, judges out of memory) and the ones whose timing
is unsteady. Beside them, the naive load_inline kernels of bench/kernelbench_kernels/ (one file per problem,
named by its catalogue name) are graded for the problems chosen, builds and all. Usage:

    python bench/kernelbench_sweep.py KernelBench/KernelBench --level 1 --limit 10

With --repeat N each problem's reference is graded N times, each afresh, and the summary gives the spread of
each problem's speedups: how far its timing moves between gradings, which one grading cannot show.

Problems are graded least device memory first (`--in-file-order` to keep the files' order), so a sweep cut
short (a GPU lease ran out) has graded as many as it could; it goes on where it stopped with `--skip-correct
OUTPUT`: the problems whose references that output shows `correct` are left out.

The folder holds level1/, level2/, level3/ folders of `N_Name.py` files. A fresh data dir and database are
made for the run; the server grades with the fast timing profile unless --env says otherwise.
"""

from __future__ import annotations

import argparse
import math
import re
import statistics
import sys
import tempfile
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kernelgrade.client import Client
from kernelgrade.evaluator.problem_memory import estimate
from kernelgrade.problems.importer import scan_folder
from kernelgrade.problems.loader import Problem
from kernelgrade.service.schemas import SubmissionIn, SubmissionOut
from throughput_corpus import as_model_new
from throughput_service import served

SUITE = "kernelbench"
SUBMITTER = "kernelbench-sweep"
REFERENCE = "reference"  # the model name a problem's own reference is submitted under
KERNELS = Path(__file__).resolve().parent / "kernelbench_kernels"
# An honest reference against itself: speedups outside this band are timing noise worth a look.
STEADY = (0.9, 1.1)
# The width of a row's problem column: a longer name is cut there, so an earlier output names it by this prefix.
NAME_WIDTH = 48
# The slowest and the largest problems the summary names.
EXTREMES = 5
# A level 3 problem's fast-profile verdict takes a minute or two on a GPU host, a CPU fixture seconds; a
# whole level of 100 problems fits in this with room to spare.
DEFAULT_TIMEOUT_S = 4 * 3600.0
_FILE_NUMBER = re.compile(r"^(\d+)_")
# A reference's row, as printed while the sweep runs ("#  12/254 name verdict ...") or in the final table.
_ROW = re.compile(r"^(?:#\s+\d+/\d+\s+)?(\S+)\s+(\S+)\s", re.MULTILINE)


@dataclass(frozen=True)
class Row:
    """One problem's verdict as the API reported it."""

    problem: str
    submission: str  # REFERENCE or the kernel file's name
    verdict: str
    code: str
    speedup: float | None
    judge_peak_bytes: int | None  # the judge's peak device memory over the evaluation, where recorded
    child_peak_bytes: int | None  # the run child's, where recorded
    stages: tuple[tuple[str, float], ...]  # top-level stages only: "stage:part" labels are inside them
    why: str = ""  # a failure's message and its detail's last line; or, for a speedup off 1x, both sides' timing
    hold: str = ""  # the method record's stream hold: "reference: ...; candidate: ..."


def selected(folder: Path, levels: Sequence[int], limit: int | None, names: Sequence[str] = ()) -> list[Problem]:
    """The folder's problems of the given levels, in file-number order, at most `limit` per level; only those
    named in `names` where it is given."""
    scan = scan_folder(folder, SUITE)
    for error in scan.errors:
        print(f"# skipped {error.path}: {error.message}", file=sys.stderr)
    chosen: list[Problem] = []
    for level in levels:
        ours = sorted((p for p in scan.problems if p.level == level and (not names or p.name in names)), key=_order)
        chosen += ours[:limit] if limit is not None else ours
    return chosen


def smallest_first(problems: Sequence[Problem]) -> list[Problem]:
    """The problems by the device memory a trial of theirs needs (evaluator/problem_memory.py), least first: a
    sweep cut short by its lease has graded as many problems as it could. Those whose need cannot be found on
    torch's meta device come last, in their order."""
    needs = {p.name: _need(p) for p in problems}
    return sorted(problems, key=lambda p: needs[p.name])


def _need(problem: Problem) -> float:
    try:
        return float(estimate(problem.source, problem.name).least)
    except Exception:  # the problem's own code on meta: anything it raises only means "not known"
        return math.inf


def correct_in(output: str) -> set[str]:
    """The problems whose references an earlier sweep's output shows `correct` (kernels' rows are not theirs), by
    their names' first NAME_WIDTH characters, as the rows show them."""
    return {m.group(1) for m in _ROW.finditer(output) if m.group(2) == "correct"}


def not_shown_correct(problems: Sequence[Problem], output: str) -> list[Problem]:
    """`problems` less those whose references an earlier sweep's `output` shows correct."""
    done = correct_in(output)
    return [p for p in problems if p.name[:NAME_WIDTH] not in done]


def _order(problem: Problem) -> tuple[int, str]:
    match = _FILE_NUMBER.match(problem.name)
    return (int(match.group(1)) if match else 1 << 30, problem.name)


def submissions(problems: Sequence[Problem], kernels: Path | None, repeat: int = 1) -> list[SubmissionIn]:
    """Each problem's reference renamed ModelNew (`repeat` times, each graded afresh), each followed by the kernel
    of `kernels` written for it, if any: a sweep cut short by its lease has graded the kernels of the problems it
    reached."""
    files = {f.stem: f for f in kernels.glob("*.py")} if kernels is not None else {}
    chosen: list[SubmissionIn] = []
    for p in problems:
        # Each grading's source differs by a comment: the service refuses a second copy of a source still queued.
        chosen += [SubmissionIn(problem=p.name, source=as_model_new(p.source) + (f"\n# grading {k + 1}\n" if k else ""),
                                submitter=SUBMITTER, model=REFERENCE, force=True) for k in range(repeat)]
        if p.name in files:
            chosen.append(SubmissionIn(problem=p.name, source=files[p.name].read_text(), submitter=SUBMITTER,
                                       model=files[p.name].name, force=True))
    return chosen


def sweep(problems: list[Problem], kernels: Path | None, settings: dict[str, str], timeout_s: float,
          repeat: int = 1) -> list[Row]:
    with tempfile.TemporaryDirectory(prefix="kernelgrade-sweep-") as tmp, \
            served(Path(tmp) / "data", Path(tmp) / "sweep.db", settings) as service:
        for problem in problems:
            # Open mode: the local admin may post problems. The typed client submits; it has no call for this.
            response = service.client.post("/v1/problems", json={"name": problem.name, "source": problem.source,
                                                                  "suite": SUITE, "level": problem.level})
            if not response.is_success:
                raise RuntimeError(f"problem {problem.name} was refused: {response.status_code} {response.text[:500]}")
        with Client(service.url) as client:
            items = client.submit_many(submissions(problems, kernels, repeat))
            ids = [_submitted(item.submission, item.error) for item in items]
            done = dict(_reported(client.as_completed(ids, timeout_s), len(ids)))
    return [done[i] for i in ids]


def _submitted(submission: SubmissionOut | None, error: Any) -> int:
    if submission is None:
        raise RuntimeError(f"a submission was refused: {error}")
    return submission.id


def _reported(finished: Iterable[SubmissionOut], total: int) -> Iterator[tuple[int, Row]]:
    """(id, row) of each finished submission, printed as it comes: a sweep cut short still shows its rows."""
    for count, out in enumerate(finished, 1):
        row = _row(out)
        print(f"# {count:>3}/{total} {_line(row)}", flush=True)
        if row.why:
            print(f"#          {row.why}", flush=True)
        yield out.id, row


def _row(out: SubmissionOut) -> Row:
    evaluation = out.evaluation
    assert evaluation is not None
    result = evaluation.result or {}
    extra = dict(result.get("extra") or [])
    stages = tuple((str(label), float(s)) for label, s in result.get("stage_seconds") or [] if ":" not in label)
    return Row(out.problem, out.model, str(evaluation.verdict), evaluation.failure.code if evaluation.failure else "",
               evaluation.speedup, _int(extra.get("judge_peak_device_bytes")),
               _int(extra.get("child_peak_device_bytes")), stages, _why(out, result),
               str((result.get("method") or {}).get("stream_hold") or ""))


def _why(out: SubmissionOut, result: dict[str, Any]) -> str:
    """What a row needs beside its verdict to be looked into without the server's database."""
    evaluation = out.evaluation
    assert evaluation is not None
    if evaluation.failure is not None:
        detail = [line.strip() for line in evaluation.failure.detail.splitlines() if line.strip()]
        # The innermost frame too: an out-of-memory's message does not say which process or call ran out.
        frames = [line for line in detail if line.startswith("File ")]
        where = f" | at {frames[-1]}" if frames else ""
        return f"{evaluation.failure.message} | {detail[-1][:400] if detail else ''}{where}"[:900]
    speedup = evaluation.speedup
    if speedup is None or STEADY[0] <= speedup <= STEADY[1]:
        return ""
    sides = [(name, result.get(key) or {}) for name, key in (("reference", "reference_timing"),
                                                             ("candidate", "candidate_timing"))]
    method = result.get("method") or {}
    return "; ".join([*(f"{name} {t.get('median_ms', 0):.4f} ms median, host {t.get('host_median_ms') or 0:.4f} ms,"
                        f" {t.get('host_bound_reps', 0)}/{t.get('n', 0)} reps host-bound, {t.get('stop_reason', '')}"
                        for name, t in sides), f"stream hold: {method.get('stream_hold', '')}"[:200],
                      str(method.get("reference_placement", ""))[:200]])


def _int(value: object) -> int | None:
    return int(str(value)) if value not in (None, "") else None


def report(rows: list[Row]) -> str:
    lines = [f"{'problem':{NAME_WIDTH}} {'verdict':14} {'speedup':>8} {'judge peak':>11} {'child peak':>11}"
             "  stages (s)"]
    lines += [_line(row) for row in rows]
    return "\n".join([*lines, "", *summary(rows)])


def _line(row: Row) -> str:
    speedup = f"{row.speedup:.3f}" if row.speedup is not None else "-"
    stages = " ".join(f"{label}={seconds:.2f}" for label, seconds in row.stages)
    verdict = f"{row.verdict}:{row.code}" if row.code else row.verdict
    return (f"{_label(row)[:NAME_WIDTH]:{NAME_WIDTH}} {verdict[:14]:14} {speedup:>8} {_gib(row.judge_peak_bytes):>11}"
            f" {_gib(row.child_peak_bytes):>11}  {stages}")


def _label(row: Row) -> str:
    return row.problem if row.submission == REFERENCE else f"{row.problem} [{row.submission}]"


def summary(rows: list[Row]) -> list[str]:
    references = [r for r in rows if r.submission == REFERENCE]
    counts = Counter(row.verdict for row in references)
    unsteady = [r for r in references if r.speedup is not None and not STEADY[0] <= r.speedup <= STEADY[1]]
    problems, gradings = len({r.problem for r in references}), len(references)
    graded = f"{problems} problems" if problems == gradings else f"{gradings} gradings of {problems} problems"
    lines = [f"{graded}: " + ", ".join(f"{verdict} {n}" for verdict, n in sorted(counts.items()))]
    lines.append(f"speedups outside {STEADY[0]}-{STEADY[1]}x: {len(unsteady)}")
    lines += [f"  {r.problem}: {r.speedup:.3f}x" for r in unsteady if r.speedup is not None]
    lines += spreads(references)
    lines += holds(rows)
    kernels = [r for r in rows if r.submission != REFERENCE]
    if kernels:
        lines.append(f"{len(kernels)} naive kernels: " + ", ".join(
            f"{r.problem} {r.verdict}" + (f" {r.speedup:.3f}x" if r.speedup is not None else "") for r in kernels))
    slowest = sorted(rows, key=_seconds, reverse=True)[:EXTREMES]
    lines.append("slowest (seconds over all stages): " + ", ".join(f"{_label(r)} {_seconds(r):.0f} s" for r in slowest))
    largest = sorted((r for r in rows if r.judge_peak_bytes is not None), key=_peak, reverse=True)[:EXTREMES]
    if largest:
        lines.append("largest (judge / child peak device memory): " + ", ".join(
            f"{_label(r)} {_gib(r.judge_peak_bytes)} / {_gib(r.child_peak_bytes)}" for r in largest))
    return lines


def spreads(references: list[Row]) -> list[str]:
    """Each problem graded more than once (--repeat): the median and range of its speedups and how many fell
    outside the band. One grading of a problem whose timing moves says little; several show how far it moves."""
    graded: dict[str, list[float]] = {}
    for row in references:
        if row.speedup is not None:
            graded.setdefault(row.problem, []).append(row.speedup)
    repeated = {name: sorted(v) for name, v in graded.items() if len(v) > 1}
    if not repeated:
        return []
    return ["speedups of problems graded more than once: median (lowest-highest), outside the band", *(
        f"  {name}: {statistics.median(v):.3f} ({v[0]:.3f}-{v[-1]:.3f}), "
        f"{sum(not STEADY[0] <= s <= STEADY[1] for s in v)} of {len(v)}" for name, v in repeated.items())]


def holds(rows: list[Row]) -> list[str]:
    """How many timed verdicts had both sides' reps held (docs/timing.md, "The stream hold"), and why the others
    were not: an unheld side's time includes its host's dispatch."""
    timed = [r for r in rows if r.hold and "not applicable" not in r.hold]
    if not timed:
        return []
    loose = [r for r in timed if not all(side.partition(": ")[2].startswith("held") for side in r.hold.split("; "))]
    return [f"stream hold: both sides held in {len(timed) - len(loose)} of {len(timed)} timed verdicts",
            *(f"  not held: {_label(r)}: {r.hold[:300]}" for r in loose)]


def _seconds(row: Row) -> float:
    return sum(seconds for _, seconds in row.stages)


def _peak(row: Row) -> int:
    return row.judge_peak_bytes or 0


def _gib(value: int | None) -> str:
    return "-" if value is None else f"{value / 1024**3:.2f} GiB"


def _settings(pairs: Sequence[str]) -> dict[str, str]:
    settings = {"KERNELGRADE_TIMING_PROFILE": "fast", "KERNELGRADE_LOG_LEVEL": "warning"}
    for pair in pairs:
        name, _, value = pair.partition("=")
        settings[name] = value
    return settings


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("folder", type=Path, help="KernelBench's problem folder (level1/, level2/, level3/)")
    parser.add_argument("--level", type=int, action="append", choices=(1, 2, 3), help="a level (repeatable;"
                        " default: all three)")
    parser.add_argument("--limit", type=int, default=None, help="at most this many problems per level")
    parser.add_argument("--problem", action="append", default=[], help="only this problem, by its catalogue name"
                        " (repeatable), e.g. 66_conv_standard_3d__asymmetric_input__square_kernel")
    parser.add_argument("--env", action="append", default=[], help="KERNELGRADE_NAME=VALUE for the server"
                        " (repeatable); KERNELGRADE_TIMING_PROFILE=fast unless given")
    parser.add_argument("--kernels", type=Path, default=KERNELS, help="a folder of kernel submissions named by"
                        f" problem, graded beside the references (default: {KERNELS.name}/)")
    parser.add_argument("--no-kernels", dest="kernels", action="store_const", const=None,
                        help="the references alone")
    parser.add_argument("--skip-correct", type=Path, default=None, metavar="OUTPUT",
                        help="an earlier sweep's output: leave out the problems it shows correct")
    parser.add_argument("--in-file-order", action="store_true", help="grade in level and file-number order"
                        " (default: the problems needing the least device memory first)")
    parser.add_argument("--repeat", type=int, default=1, metavar="N", help="grade each problem's reference N times,"
                        " each afresh, and summarise the spread of its speedups (default: once)")
    parser.add_argument("--timeout-s", type=float, default=DEFAULT_TIMEOUT_S)
    args = parser.parse_args(argv)
    if args.repeat < 1:
        print("--repeat takes a count of 1 or more", file=sys.stderr)
        return 2
    problems = selected(args.folder, args.level or [1, 2, 3], args.limit, args.problem)
    if not args.in_file_order:
        problems = smallest_first(problems)
    if args.skip_correct is not None:
        before = len(problems)
        problems = not_shown_correct(problems, args.skip_correct.read_text())
        print(f"# left out {before - len(problems)} problems {args.skip_correct} shows correct", flush=True)
        if not problems:
            print("# nothing left to grade")
            return 0
    if not problems:
        print(f"no problems of levels {args.level or [1, 2, 3]} under {args.folder}", file=sys.stderr)
        return 2
    print(f"# kernelbench sweep: {len(problems)} problems from {args.folder}", flush=True)
    print(report(sweep(problems, args.kernels, _settings(args.env), args.timeout_s, args.repeat)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
