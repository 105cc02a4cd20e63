"""Scanning a KernelBench-style folder of problem files: `level1/1_Square_matrix_multiplication_.py`, ...

The level comes from the nearest enclosing `levelN` folder, the suite from the scanned folder's name (or
the caller), the name from the file name; a file's own KERNELGRADE dict overrides suite and level. Files
without one get the loader's defaults (cuda, fp32 policy), as KernelBench files have none. Nothing is
executed: each file is only parsed, so a folder can be scanned where its problems could not run. A file
that is not a problem is reported beside the problems, not raised, so one bad file does not stop an import.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from kernelgrade.problems.loader import Problem, ProblemFormatError, load_problem_source

DEFAULT_SUITE = "imported"
_LEVEL_DIR = re.compile(r"level[_-]?(\d+)", re.IGNORECASE)
_UNSAFE = re.compile(r"[^a-z0-9]+")


@dataclass(frozen=True)
class ScanError:
    path: Path
    message: str


@dataclass(frozen=True)
class ScanResult:
    problems: tuple[Problem, ...]
    errors: tuple[ScanError, ...]


def scan_folder(path: Path, suite: str | None = None) -> ScanResult:
    """Every problem file under `path`, in a stable order, plus one error for each file that is not one.
    Raises NotADirectoryError only when `path` itself is not a folder."""
    if not path.is_dir():
        raise NotADirectoryError(f"{path} is not a folder")
    suite_name = suite or default_suite(path)
    problems: list[Problem] = []
    errors: list[ScanError] = []
    seen: dict[str, Path] = {}
    for file in problem_files(path):
        try:
            problem = _load(file, suite_name, _level(file, path))
        except (ProblemFormatError, OSError, UnicodeDecodeError) as exc:
            errors.append(ScanError(file, str(exc)))
            continue
        if problem.name in seen:
            errors.append(ScanError(file, f"{problem.name}: the same name as {seen[problem.name]}"))
            continue
        seen[problem.name] = file
        problems.append(problem)
    return ScanResult(tuple(problems), tuple(errors))


def problem_files(root: Path) -> list[Path]:
    """Python files under root, skipping hidden and private ones (`.git`, `__init__.py`, `_helpers/`)."""
    return sorted(f for f in root.rglob("*.py")
                  if f.is_file() and not any(part.startswith((".", "_")) for part in f.relative_to(root).parts))


def problem_name(stem: str) -> str:
    """`1_Square_matrix_multiplication_` -> `1_square_matrix_multiplication`: lowercase letters, digits and
    single underscores, safe in a URL, a command line and a file name."""
    return _UNSAFE.sub("_", stem.lower()).strip("_")


def default_suite(root: Path) -> str:
    """The scanned folder's name (`KernelBench` -> `kernelbench`); its parent's when it is a level folder."""
    folder = root.resolve()
    if _LEVEL_DIR.fullmatch(folder.name) and folder.parent != folder:
        folder = folder.parent
    return problem_name(folder.name) or DEFAULT_SUITE


def _level(file: Path, root: Path) -> int | None:
    """The number of the innermost `levelN` folder between root (inclusive) and the file."""
    folders = [root.resolve().name, *file.relative_to(root).parts[:-1]]
    for folder in reversed(folders):
        match = _LEVEL_DIR.fullmatch(folder)
        if match:
            return int(match.group(1))
    return None


def _load(file: Path, suite: str, level: int | None) -> Problem:
    name = problem_name(file.stem)
    if not name:
        raise ProblemFormatError(f"{file.name}: no usable problem name in the file name")
    return load_problem_source(file.read_text(encoding="utf-8"), name, suite, level)
