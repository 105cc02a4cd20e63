"""Plain-language words for statuses and verdicts, and the lines of an error log worth showing first."""

from __future__ import annotations

import re

VERDICTS = {
    "correct": "Every correctness check passed on fresh random inputs; the kernel was then timed against the"
               " reference on the same device, and its speedup is on the leaderboard.",
    "incorrect": "The kernel ran, but its outputs differ from the reference's beyond the problem's tolerance"
                 " (see the trial table for which check failed and by how much).",
    "compile_error": "The extension did not build. The compiler's message is below; fix the first error it names.",
    "runtime_error": "The code raised an exception or crashed while loading or running (CUDA errors included).",
    "timeout": "A stage ran past its time limit, so the kernel was stopped. Look for an infinite loop, a deadlock,"
               " or work far slower than the reference.",
    "rejected": "The source breaks a rule checked before anything runs (no ModelNew, a syntax error, too large,"
                " or a construct the problem's policy forbids). Nothing was executed.",
    "flagged": "It ran, but an integrity check failed (for example, results computed outside the timed call)."
               " The result is kept off the leaderboards; the findings below say why.",
    "error": "The grader itself failed; this is not the submission's fault. It was retried and then reported.",
}

STATUSES = {
    "queued": "Waiting for a judge; this page updates by itself.",
    "compiling": "Building the extension in a sandbox; this page updates by itself.",
    "running": "Checking correctness and timing against the reference; this page updates by itself.",
    "done": "Graded.",
}

_IMPORTANT = re.compile(r"error|exception|traceback|failed|undefined|not declared|^\s*File ", re.IGNORECASE)
CONTEXT_LINES = 2


def explain_verdict(verdict: str | None, status: str) -> str:
    if verdict is None:
        return STATUSES.get(status, status)
    return VERDICTS.get(verdict, verdict)


def relevant_lines(log: str, limit: int = 40) -> list[str]:
    """The lines of a compiler or runtime log that name the problem, with a little context; the tail when
    nothing matches (Python puts the exception last)."""
    lines = log.splitlines()
    keep = sorted({j for i, line in enumerate(lines) if _IMPORTANT.search(line)
                   for j in range(max(i - CONTEXT_LINES, 0), min(i + CONTEXT_LINES + 1, len(lines)))})
    chosen = [lines[i] for i in keep] or lines[-limit:]
    return chosen[:limit]


def source_excerpt(source: str, line: int | None, around: int = 3) -> list[tuple[int, str]]:
    """Numbered source lines around `line` (1-based); empty when there is no line to point at."""
    lines = source.splitlines()
    if line is None or not 1 <= line <= len(lines):
        return []
    first, last = max(line - around, 1), min(line + around, len(lines))
    return [(n, lines[n - 1]) for n in range(first, last + 1)]
