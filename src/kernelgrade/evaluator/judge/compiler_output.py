"""Turning a failed build's log into the few lines a person needs: the compiler's first real errors.

ninja builds translation units in parallel and prints `FAILED: <unit>` before each failing one's output,
so errors are picked round-robin across failing units: a C++ error in main.cpp is not buried under
twenty nvcc errors from cuda.cu.
"""

from __future__ import annotations

import re

_ERROR = re.compile(r"(\berror\b\s*:|: error\b|\berror [A-Z]+\d+|fatal error|undefined reference|#error)",
                    re.IGNORECASE)
_NOISE = re.compile(r"^(\[\d+/\d+\]|ninja: |subprocess\.CalledProcessError|The above exception|Traceback|"
                    r"  File \"|\s*raise |c\+\+ -MMD|\S*nvcc |In file included from|\s+from |.*In instantiation of|"
                    r".*required from|\s*detected during|.*note: )")
# gcc echoes the offending source line as `   5 | code` and the caret as `     |  ^~~`.
_CODE_ECHO = re.compile(r"^\s*\d*\s*\|")
_TORCH_INCLUDE = re.compile(r"\S*/torch/include/")
# Enough to see the first few distinct errors with their source line and caret; the rest is usually fallout.
MAX_ERRORS = 4
CONTEXT_LINES = 2
MAX_LINE = 300


def first_errors(log: str, build_dir: str = "") -> str:
    lines = [_shorten(line, build_dir) for line in log.splitlines()]
    units = _errors_by_unit(lines)
    picked: list[str] = []
    depth = 0
    while len(picked) < MAX_ERRORS and any(depth < len(u) for u in units):
        picked.extend(u[depth] for u in units if depth < len(u))
        depth += 1
    if picked:
        return "\n".join(picked[:MAX_ERRORS])
    tail = [line for line in lines if line.strip() and not _NOISE.match(line)]
    return "\n".join(tail[-20:])


def _errors_by_unit(lines: list[str]) -> list[list[str]]:
    """Distinct error blocks (the error line and its source/caret lines), grouped by failing unit."""
    units: list[list[str]] = [[]]
    seen: set[str] = set()
    for i, line in enumerate(lines):
        if line.startswith("FAILED:"):
            units.append([])
            continue
        if not _ERROR.search(line) or _NOISE.match(line) or _CODE_ECHO.match(line):
            continue
        if "Error building extension" in line:
            continue
        key = line.strip()
        if key in seen:
            continue
        seen.add(key)
        units[-1].append("\n".join([line, *_context(lines[i + 1 : i + 1 + CONTEXT_LINES])]))
    return [u for u in units if u]


def _context(following: list[str]) -> list[str]:
    context = []
    for line in following:
        echo = _CODE_ECHO.match(line)
        if not line.strip() or line.startswith("FAILED:") or (not echo and (_ERROR.search(line) or _NOISE.match(line))):
            break
        context.append(line)
    return context


def _shorten(line: str, build_dir: str) -> str:
    if build_dir:
        line = line.replace(build_dir, "<build>")
    line = _TORCH_INCLUDE.sub("<torch>/", line)
    return line if len(line) <= MAX_LINE else line[:MAX_LINE] + " ..."
