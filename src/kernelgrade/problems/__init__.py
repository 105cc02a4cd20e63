"""Problems: the built-in suite and the loader/importer for KernelBench-format problem files."""

from kernelgrade.problems.importer import ScanError, ScanResult, problem_name, scan_folder
from kernelgrade.problems.loader import (
    Problem,
    ProblemFormatError,
    builtin_problems,
    find_builtin,
    load_problem_file,
    load_problem_source,
    resolve_problem,
)

__all__ = ["Problem", "ProblemFormatError", "ScanError", "ScanResult", "builtin_problems", "find_builtin",
           "load_problem_file", "load_problem_source", "problem_name", "resolve_problem",
           "scan_folder"]
