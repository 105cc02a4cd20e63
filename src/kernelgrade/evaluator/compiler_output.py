"""Turning a failed build's log into the few lines a person needs: the compiler's first real errors."""

from __future__ import annotations

import re

_ERROR = re.compile(r"(\berror\b\s*:|: error\b|\berror [A-Z]+\d+|fatal error|undefined reference|"
                    r"\bError building extension\b|#error)", re.IGNORECASE)
_NOISE = re.compile(r"^(\[\d+/\d+\]|FAILED:|ninja: |subprocess\.CalledProcessError|The above exception|"
                    r"Traceback|  File \"|\s*raise |c\+\+ -MMD|/usr/.*nvcc .*-c )")
# Enough to see the first few distinct errors with their source line and caret; the rest is usually fallout.
MAX_ERRORS = 4
CONTEXT_LINES = 3
MAX_LINE = 300


def first_errors(log: str, build_dir: str = "") -> str:
    lines = [_shorten(line, build_dir) for line in log.splitlines()]
    picked: list[str] = []
    seen: set[str] = set()
    for i, line in enumerate(lines):
        if not _ERROR.search(line) or _NOISE.match(line) or "Error building extension" in line:
            continue
        key = line.strip()
        if key in seen:
            continue
        seen.add(key)
        block = [line] + [c for c in lines[i + 1 : i + 1 + CONTEXT_LINES] if c.strip() and not _ERROR.search(c)
                          and not _NOISE.match(c)]
        picked.append("\n".join(block))
        if len(picked) >= MAX_ERRORS:
            break
    if picked:
        return "\n".join(picked)
    tail = [line for line in lines if line.strip() and not _NOISE.match(line)]
    return "\n".join(tail[-20:])


def _shorten(line: str, build_dir: str) -> str:
    if build_dir:
        line = line.replace(build_dir, "<build>")
    return line if len(line) <= MAX_LINE else line[:MAX_LINE] + " ..."
