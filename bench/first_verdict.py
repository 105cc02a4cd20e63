"""A new user's first verdicts: a fresh `kernelgrade serve` (empty data dir, default settings), then correct C++
submissions posted one after another, each timed from its POST to its verdict, with every progress line the
API showed on the way and the stages' seconds from the result.

    .venv/bin/python bench/first_verdict.py [--problem add_relu] [--count 2] [--src OTHER_CHECKOUT/src]

The first submission pays for everything a fresh server has not done yet (its first build, the precompiled
header, the problem's reference); later ones differ only in a comment, so each is a new build of the same
extension. `--src` runs another checkout's server (a before/after comparison in one run, one after the other).
Prints numbers; asserts nothing.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from kernelgrade.client import Client
from kernelgrade.client.errors import ApiError
from kernelgrade.service.schemas import SubmissionIn, SubmissionOut
from throughput_service import served

SUBMISSION = Path(__file__).resolve().parent.parent / "tests" / "cases" / "cpu_correct" / "submission.py"
# What a user would wait at most for one verdict before giving up on the service.
VERDICT_TIMEOUT_S = 900.0
# Often enough to see each stage's progress line, rarely enough not to load the 2-core server measured.
POLL_S = 0.5


@dataclass(frozen=True)
class FirstVerdict:
    seconds: float  # from the POST's return to the first GET that showed the verdict
    verdict: str
    stages: dict[str, float]
    progress: list[tuple[float, str]]  # (seconds after the POST, the progress line first seen then)
    baseline: str
    timings: list[str]  # each timed side: reps and why its loop stopped


def follow(client: Client, submission_id: int, started: float) -> tuple[SubmissionOut, list[tuple[float, str]]]:
    seen: list[tuple[float, str]] = []
    while time.monotonic() - started < VERDICT_TIMEOUT_S:
        current = client.get(submission_id)
        evaluation = current.evaluation
        if evaluation is not None and evaluation.progress is not None:
            line = f"[{evaluation.progress.stage}] {evaluation.progress.message}"
            if not seen or seen[-1][1] != line:
                seen.append((time.monotonic() - started, line))
        if evaluation is not None and evaluation.verdict is not None:
            return current, seen
        time.sleep(POLL_S)
    raise TimeoutError(f"submission {submission_id} had no verdict after {VERDICT_TIMEOUT_S:.0f} s")


def grade_one(client: Client, problem: str, source: str) -> FirstVerdict:
    started = time.monotonic()
    submitted = client.submit(SubmissionIn(problem=problem, source=source, model="first-verdict", force=True))
    done, progress = follow(client, submitted.id, started)
    evaluation = done.evaluation
    assert evaluation is not None and evaluation.verdict is not None
    stages = dict((evaluation.result or {}).get("stage_seconds") or {})
    baseline = evaluation.compiled_baseline.status if evaluation.compiled_baseline else "none"
    timings = [f"{side} {timing.n} reps ({timing.stop_reason}, median {timing.median_ms:.4g} ms)"
               for side, timing in (("reference", evaluation.reference_timing),
                                    ("candidate", evaluation.candidate_timing)) if timing is not None]
    return FirstVerdict(time.monotonic() - started, evaluation.verdict, stages, progress, baseline, timings)


def report(index: int, graded: FirstVerdict) -> None:
    stages = ", ".join(f"{name} {seconds:.1f}" for name, seconds in graded.stages.items())
    print(f"submission {index}: {graded.verdict} in {graded.seconds:.1f} s (compiled baseline: {graded.baseline})")
    print(f"  stages (s): {stages}")
    print(f"  timing: {'; '.join(graded.timings)}")
    for at, line in graded.progress:
        print(f"  {at:7.1f} s  {line}")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--problem", default="add_relu", help="a built-in CPU problem the submission solves")
    parser.add_argument("--count", type=int, default=2, help="submissions, one after another")
    parser.add_argument("--src", type=Path, default=None, help="run this checkout's src/ as the server")
    args = parser.parse_args(argv)
    source = SUBMISSION.read_text()
    with tempfile.TemporaryDirectory(prefix="first-verdict-") as tmp:
        data_dir = Path(tmp) / "data"
        with served(data_dir, data_dir / "kernelgrade.db", {}, args.src) as service, Client(service.url) as client:
            print(f"server {service.url} ({args.src or 'this checkout'}), fresh data dir, default settings")
            for index in range(args.count):
                try:
                    report(index + 1, grade_one(client, args.problem, source + f"\n# variant {index}\n"))
                except ApiError as error:
                    print(f"submission {index + 1}: refused: {error}")
                    return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
