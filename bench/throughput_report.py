"""bench/throughput.py's numbers: one configuration's verdicts summarized, and the tables that print them."""

from __future__ import annotations

import math
import statistics
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace

from host_memory import HostMemory
from kernelbench_inprocess import InProcess
from throughput_service import Config, Graded

# The stages a run child holds the device for; compile, validate (reference preparation included) and
# child_start are not counted (a warm judge starts children while the device grades something else). A second
# attempt's first one (a child that ran out of device memory) counts whole: it held the device up to its end.
DEVICE_STAGES = ("load", "correctness", "timing", "compiled_baseline", "first_attempt")


@dataclass(frozen=True)
class StageRow:
    label: str
    evaluations: int  # evaluations that reached this stage
    median_s: float
    total_s: float


@dataclass(frozen=True)
class Share:
    """A part of the judges' time (wall x devices), per verdict and as a fraction of the whole."""

    label: str
    s_per_verdict: float
    fraction: float


@dataclass(frozen=True)
class Count:
    name: str
    count: int


@dataclass(frozen=True)
class Check:
    name: str
    values: list[Count]


@dataclass(frozen=True)
class Mismatch:
    submission_id: int
    case: str
    expected: str
    verdict: str
    code: str | None
    why: str = ""


@dataclass(frozen=True)
class Spread:
    """The speedups of one case's correct verdicts: its variants differ by a comment, so a wide spread is the
    measurement's own noise (a host busy beside the timing, say)."""

    case: str
    n: int
    median: float
    low: float
    high: float


@dataclass(frozen=True)
class CaseParts:
    """A case's correct verdicts, the median seconds of each part of their device stages ("timing:reference",
    or a device stage that records no parts, like load)."""

    case: str
    parts: list[StageRow]


@dataclass(frozen=True)
class RunReport:
    label: str
    settings: dict[str, str]
    n: int
    devices: int
    wall_s: float  # first evaluation created -> last verdict, server timestamps
    verdicts_per_hour: float
    verdicts_per_device_hour: float
    latency_p50_s: float
    latency_p95_s: float
    device_s_total: float
    device_s_per_verdict: float
    device_s_per_correct: float | None
    busy_fraction: float  # device_s_total / (wall_s x devices)
    build_pass_s: float | None  # --prebuilt: the unmeasured pass that built everything
    stages: list[StageRow]
    judge_time: list[Share]  # judge_time(): device stages, other stages, the rest of each job, between jobs
    by_case: list[StageRow]  # per base case: device seconds of its correct verdicts (the goals are per problem)
    speedups: list[Spread]  # per base case: its correct verdicts' speedups (the variants are one kernel)
    case_parts: list[CaseParts]  # per base case: where those device seconds go
    verdicts: list[Count]
    mismatches: list[Mismatch]
    checks: list[Check]
    notes: list[str] = field(default_factory=list)  # "submission N (case): code: message", see Graded.notes
    host_memory: HostMemory | None = None  # the host's memory while the pass ran (host_memory.py)


@dataclass(frozen=True)
class InProcessSummary:
    builds_s: float
    graded: list[InProcess]
    s_per_verdict: float
    correct: int

    @classmethod
    def of(cls, graded: list[InProcess], builds_s: float) -> InProcessSummary:
        mean = statistics.fmean(g.seconds for g in graded) if graded else math.nan
        return cls(builds_s, graded, mean, sum(g.correct for g in graded))


def device_seconds(graded: Graded) -> float:
    return sum(seconds for label, seconds in graded.stages if label in DEVICE_STAGES)


def nearest_rank(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[max(0, math.ceil(fraction * len(ordered)) - 1)]


def summarize(config: Config, graded: list[Graded], devices: int, build_pass_s: float | None,
              cut_s: float | None = None, host_memory: HostMemory | None = None) -> RunReport:
    """`cut_s`: when a pass cut short stopped waiting (seconds since the epoch), which ends its wall time."""
    wall = (cut_s or max(g.finished_s for g in graded)) - min(g.created_s for g in graded)
    latencies = [g.finished_s - g.created_s for g in graded]
    device = [device_seconds(g) for g in graded]
    correct = [device_seconds(g) for g in graded if g.verdict == "correct"]
    return RunReport(
        label=config.label, settings=dict(config.env), n=len(graded), devices=devices, wall_s=wall,
        verdicts_per_hour=3600.0 * len(graded) / wall, verdicts_per_device_hour=3600.0 * len(graded) / (wall * devices),
        latency_p50_s=nearest_rank(latencies, 0.5), latency_p95_s=nearest_rank(latencies, 0.95),
        device_s_total=sum(device), device_s_per_verdict=statistics.fmean(device),
        device_s_per_correct=statistics.fmean(correct) if correct else None,
        busy_fraction=sum(device) / (wall * devices), build_pass_s=build_pass_s, stages=stage_rows(graded),
        judge_time=judge_time(graded, wall * devices), by_case=case_rows(graded), speedups=spreads(graded),
        case_parts=case_parts(graded),
        verdicts=_counted(_verdict_name(g) for g in graded), mismatches=mismatches(graded), checks=checks(graded),
        notes=[f"submission {g.submission_id} ({g.case}): {note}" for g in graded for note in g.notes],
        host_memory=host_memory)


# judge_time()'s parts, in the order they print; a run has either the rest of each job whole or split in two.
DEVICE, OTHER, REST, IN_EVALUATE, AROUND, BETWEEN = (
    "device stages", "other stages", "in a job, outside any stage", "in evaluate(), between stages",
    "in the judge, around evaluate()", "between jobs (claim; none ready)")
JUDGE_TIME_ORDER = (DEVICE, OTHER, REST, IN_EVALUATE, AROUND, BETWEEN)


def judge_time(graded: list[Graded], judge_s: float) -> list[Share]:
    """Where the judges' time goes. A stage's parts are labelled "stage:part", so the labels without a colon
    cover a job's staged time once. The rest of a job (claim to recorded result) lies in evaluate() between its
    stages, or in the judge around it (the claim's tail, the request, the result's recording); results that
    give evaluate()'s own wall time tell the two apart. Outside any job a judge claims the next one or has
    nothing ready to claim (builds running)."""
    device = sum(device_seconds(g) for g in graded)
    staged = sum(s for g in graded for label, s in g.stages if ":" not in label)
    in_jobs = sum(g.finished_s - g.started_s for g in graded)
    parts = [(DEVICE, device), (OTHER, staged - device)]
    walls = [g.wall_s for g in graded if g.wall_s is not None]
    if len(walls) == len(graded):
        parts += [(IN_EVALUATE, sum(walls) - staged), (AROUND, in_jobs - sum(walls))]
    else:
        parts.append((REST, in_jobs - staged))
    parts.append((BETWEEN, judge_s - in_jobs))
    return [Share(label, seconds / len(graded), seconds / judge_s) for label, seconds in parts]


def stage_rows(graded: list[Graded]) -> list[StageRow]:
    """Per label, each evaluation's seconds (a label met twice, like validate, summed), in the order met."""
    per_label: dict[str, list[float]] = {}
    for g in graded:
        mine: dict[str, float] = {}
        for label, seconds in g.stages:
            mine[label] = mine.get(label, 0.0) + seconds
        for label, seconds in mine.items():
            per_label.setdefault(label, []).append(seconds)
    return [_row(label, v) for label, v in per_label.items()]


def case_rows(graded: list[Graded]) -> list[StageRow]:
    return [_row(case, [device_seconds(g) for g in mine]) for case, mine in _correct_by_case(graded)]


def spreads(graded: list[Graded]) -> list[Spread]:
    timed = [(case, [g.speedup for g in mine if g.speedup is not None]) for case, mine in _correct_by_case(graded)]
    return [Spread(case, len(v), statistics.median(v), min(v), max(v)) for case, v in timed if v]


def case_parts(graded: list[Graded]) -> list[CaseParts]:
    return [CaseParts(case, stage_rows([replace(g, stages=device_parts(g)) for g in mine]))
            for case, mine in _correct_by_case(graded)]


def _correct_by_case(graded: list[Graded]) -> list[tuple[str, list[Graded]]]:
    """The correct verdicts of each base case, cases in name order."""
    per_case: dict[str, list[Graded]] = {}
    for g in graded:
        if g.verdict == "correct":
            per_case.setdefault(g.case, []).append(g)
    return sorted(per_case.items())


def device_parts(graded: Graded) -> tuple[tuple[str, float], ...]:
    """The parts of its device stages; a device stage without parts stands for itself."""
    parted = {label.split(":")[0] for label, _ in graded.stages if ":" in label}
    return tuple((label, s) for label, s in graded.stages if label.split(":")[0] in DEVICE_STAGES
                 and (":" in label or label not in parted))


def _row(label: str, seconds: list[float]) -> StageRow:
    return StageRow(label, len(seconds), statistics.median(seconds), sum(seconds))


def mismatches(graded: list[Graded]) -> list[Mismatch]:
    return [Mismatch(g.submission_id, g.case, g.expect.value, g.verdict, g.failure_code, g.why)
            for g in graded if g.verdict != g.expect.value]


def checks(graded: list[Graded]) -> list[Check]:
    by_check: dict[str, Counter[str]] = {}
    for g in graded:
        for name, value in g.checks:
            by_check.setdefault(name, Counter())[value] += 1
    return [Check(name, [Count(v, c) for v, c in counter.most_common()]) for name, counter in by_check.items()]


def _verdict_name(graded: Graded) -> str:
    return graded.verdict if graded.verdict == "correct" else f"{graded.verdict}/{graded.failure_code}"


def _counted(names: Iterable[str]) -> list[Count]:
    return [Count(name, count) for name, count in Counter(names).most_common()]


# --- printing -----------------------------------------------------------------------------------------------

Metric = tuple[str, Callable[[RunReport], float | None], str]


def _host(name: str) -> Callable[[RunReport], float | None]:
    """A figure of the run's host memory summary, where it has one."""
    return lambda r: None if r.host_memory is None else getattr(r.host_memory, name)


METRICS: tuple[Metric, ...] = (
    ("verdicts/hour", lambda r: r.verdicts_per_hour, "{:.1f}"),
    ("verdicts per device-hour", lambda r: r.verdicts_per_device_hour, "{:.1f}"),
    ("wall s (submit -> last verdict or cut)", lambda r: r.wall_s, "{:.1f}"),
    ("latency p50 s (submit -> verdict)", lambda r: r.latency_p50_s, "{:.1f}"),
    ("latency p95 s", lambda r: r.latency_p95_s, "{:.1f}"),
    ("device s per verdict (all)", lambda r: r.device_s_per_verdict, "{:.2f}"),
    ("device s per verdict (correct ones)", lambda r: r.device_s_per_correct, "{:.2f}"),
    ("device busy fraction", lambda r: r.busy_fraction, "{:.3f}"),
    ("build pass s (not measured)", lambda r: r.build_pass_s, "{:.1f}"),
    ("host: least memory available GiB", _host("least_available_gib"), "{:.1f}"),
    ("host: most dirty GiB (to write back)", _host("most_dirty_gib"), "{:.1f}"),
    ("host: most under writeback GiB", _host("most_writeback_gib"), "{:.1f}"),
    ("host: memory stall s (PSI some)", _host("stall_some_s"), "{:.1f}"),
    ("host: memory stall s (PSI full)", _host("stall_full_s"), "{:.1f}"),
)
NAME_W, COL_W = 40, 20


def print_runs(runs: list[RunReport]) -> None:
    print(f"\n== {runs[0].n} distinct submissions, {runs[0].devices} device(s)"
          f" {'(already built)' if runs[0].build_pass_s is not None else '(builds included)'}")
    ratio = len(runs) == 2
    print(f"{'':<{NAME_W}}" + "".join(f"{r.label:>{COL_W}}" for r in runs) + (f"{'2nd/1st':>10}" if ratio else ""))
    for name, get, form in METRICS:
        values = [get(r) for r in runs]
        cells = "".join(f"{_cell(v, form):>{COL_W}}" for v in values)
        print(f"{name:<{NAME_W}}{cells}" + (f"{_ratio(values[0], values[1]):>10}" if ratio else ""))
    _print_stages(runs)
    _print_judge_time(runs)
    _print_cases(runs)
    _print_case_parts(runs)
    _print_verdicts(runs)
    _print_checks(runs)


def _cell(value: float | None, form: str) -> str:
    return "-" if value is None else form.format(value)


def _ratio(first: float | None, second: float | None) -> str:
    return "-" if not first or second is None else f"{second / first:.2f}x"


def _print_stages(runs: list[RunReport]) -> None:
    print(f"\n{'stage: median / total s':<{NAME_W}}" + "".join(f"{r.label:>{COL_W}}" for r in runs))
    labels = list(dict.fromkeys(row.label for r in runs for row in r.stages))
    for label in labels:
        rows = [next((s for s in r.stages if s.label == label), None) for r in runs]
        mark = " *" if label in DEVICE_STAGES else ""
        print(f"{label + mark:<{NAME_W}}" + "".join(
            f"{'-' if s is None else f'{s.median_s:.2f} / {s.total_s:.1f}':>{COL_W}}" for s in rows))
    print(f"{'(* device stages: the run child holds the device)':<{NAME_W}}")


def _print_judge_time(runs: list[RunReport]) -> None:
    print(f"\n{'judge time per verdict: s / fraction':<{NAME_W}}" + "".join(f"{r.label:>{COL_W}}" for r in runs))
    present = {share.label for r in runs for share in r.judge_time}
    for label in (label for label in JUDGE_TIME_ORDER if label in present):
        cells = [next((c for c in r.judge_time if c.label == label), None) for r in runs]
        print(f"{label:<{NAME_W}}" + "".join(
            f"{'-' if c is None else f'{c.s_per_verdict:.2f} / {c.fraction:.3f}':>{COL_W}}" for c in cells))


def _print_cases(runs: list[RunReport]) -> None:
    print(f"\n{'correct verdicts, device s: n / median':<{NAME_W}}" + "".join(f"{r.label:>{COL_W}}" for r in runs))
    for case in dict.fromkeys(row.label for r in runs for row in r.by_case):
        rows = [next((s for s in r.by_case if s.label == case), None) for r in runs]
        print(f"{case:<{NAME_W}}" + "".join(
            f"{'-' if s is None else f'{s.evaluations} / {s.median_s:.2f}':>{COL_W}}" for s in rows))
    print(f"{'  speedup: median (lowest-highest)':<{NAME_W}}")
    for case in dict.fromkeys(s.case for r in runs for s in r.speedups):
        spreads = [next((s for s in r.speedups if s.case == case), None) for r in runs]
        print(f"{'  ' + case:<{NAME_W}}" + "".join(
            f"{'-' if s is None else f'{s.median:.2f} ({s.low:.2f}-{s.high:.2f})':>{COL_W}}" for s in spreads))


# Parts under this median are left out of the per-case lines, which would otherwise list every sub-step.
SHOWN_PART_S = 0.02


def _print_case_parts(runs: list[RunReport]) -> None:
    for r in runs:
        print(f"\ncorrect verdicts, median device s by part ({r.label})")
        for case in r.case_parts:
            parts = ", ".join(f"{p.label} {p.median_s:.2f}" for p in case.parts if p.median_s >= SHOWN_PART_S)
            print(f"  {case.case}: {parts}")


def _print_verdicts(runs: list[RunReport]) -> None:
    print(f"\n{'verdict/failure code':<{NAME_W}}" + "".join(f"{r.label:>{COL_W}}" for r in runs))
    names = list(dict.fromkeys(c.name for r in runs for c in r.verdicts))
    for name in names:
        counts = [next((c.count for c in r.verdicts if c.name == name), 0) for r in runs]
        print(f"{name:<{NAME_W}}" + "".join(f"{c:>{COL_W}}" for c in counts))
    for r in runs:
        for m in r.mismatches:
            print(f"  {r.label}: submission {m.submission_id} ({m.case}) expected {m.expected}, got {m.verdict}"
                  f" ({m.code})" + (f"\n    {m.why}" if m.why else ""))
        for note in r.notes:
            print(f"  {r.label}: {note}")


def _print_checks(runs: list[RunReport]) -> None:
    same = all(r.checks == runs[0].checks for r in runs)
    for r in runs[:1] if same else runs:
        print(f"\nchecks the results record{'' if same else f' ({r.label})'}: value (evaluations)")
        for check in r.checks:
            values = "; ".join(f"{v.name} ({v.count})" for v in check.values)
            print(f"  {check.name}: {values}")


def print_in_process(summary: InProcessSummary, runs: list[RunReport]) -> None:
    print(f"\n== KernelBench's protocol in this process (no sandbox, no service, no reference timing);"
          f" kernels built beforehand in {summary.builds_s:.1f} s")
    print(f"{'case':<34}{'allclose':>10}{'mean_ms':>12}{'seconds':>10}")
    for g in summary.graded:
        mean = "-" if g.mean_ms is None else f"{g.mean_ms:.4f}"
        print(f"{g.case:<34}{g.correct!s:>10}{mean:>12}{g.seconds:>10.2f}")
    for r in runs:
        ours = r.device_s_per_correct
        ratio = "-" if ours is None or not summary.s_per_verdict else f"{ours / summary.s_per_verdict:.2f}"
        print(f"kernelbench in-process: {summary.s_per_verdict:.2f} s/verdict, ours ({r.label}):"
              f" {_cell(ours, '{:.2f}')} s/verdict of device time (correct verdicts), ratio ours/kernelbench {ratio}")
