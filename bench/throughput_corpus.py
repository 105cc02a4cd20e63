"""The submissions bench/throughput.py grades: real load_inline kernels from tests/cases, each made distinct;
or, for --mixed, a stream over many distinct KernelBench problems with those kernels among them.

A base case is a verdict-case folder (its submission.py, and its problem: a built-in name in problem.txt or a
problem.py of its own). Every submission of the stream is a variant of one: a `// variant k` line in its C++/CUDA
source, so that no two share a build. A compile-error variant also gets a declaration that does not parse, and
a wrong variant adds 1.0f to an output value; cases that already fail (two of the seeds do not build,
cpu_wrong_values forgets the relu) are used as they are, with the variant line.
"""

from __future__ import annotations

import hashlib
import random
import re
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

CASES = Path(__file__).resolve().parent.parent / "tests" / "cases"
# Every C++/CUDA source of the cases below includes this first; the variant line goes right after it.
ANCHOR = "#include <torch/extension.h>\n"


class Expect(StrEnum):
    CORRECT = "correct"
    COMPILE_ERROR = "compile_error"
    INCORRECT = "incorrect"


@dataclass(frozen=True)
class BaseCase:
    folder: str
    gets: Expect  # the verdict of the case as it is
    # A text replacement that makes an output value wrong by 1.0 (correct cases only).
    wrong: tuple[str, str] | None = None


# Small problems, plus the three seeds that build (4096 matmuls, about 16 ms a call on an H100). The 1.5 GiB
# `relu` case is left out: it measures the judge's disk more than its throughput.
CUDA_CASES = (
    BaseCase("honest_fast_cuda_elementwise", Expect.CORRECT,
             ("r.x = fmaxf(x.x + y.x, 0.0f);", "r.x = fmaxf(x.x + y.x, 0.0f) + 1.0f;")),
    BaseCase("honest_cuda_kahan_sum", Expect.CORRECT,
             ("out[blockIdx.x] = partial[0];", "out[blockIdx.x] = partial[0] + 1.0f;")),
    BaseCase("honest_cuda_tiled_matmul", Expect.CORRECT,
             ("c[row * n + col] = acc;", "c[row * n + col] = acc + 1.0f;")),
    BaseCase("honest_cuda_naive_matmul", Expect.CORRECT,
             ("c[row * n + col] = acc;", "c[row * n + col] = acc + 1.0f;")),
    BaseCase("seed_000", Expect.CORRECT, ("C[Row * N + Col] = Cvalue;", "C[Row * N + Col] = Cvalue + 1.0f;")),
    BaseCase("seed_001", Expect.CORRECT, ("C[row * N + col] = C_value;", "C[row * N + col] = C_value + 1.0f;")),
    BaseCase("seed_003", Expect.CORRECT, ("C[Row * N + Col] = Cvalue;", "C[Row * N + Col] = Cvalue + 1.0f;")),
    BaseCase("seed_002", Expect.COMPILE_ERROR),  # -std=c++14 against headers that need C++17
    BaseCase("seed_004", Expect.COMPILE_ERROR),  # getCurrentCUDAStream without its header
)
RELU_CLAMP = ("po[i] = v > 0.0f ? v : 0.0f;", "po[i] = (v > 0.0f ? v : 0.0f) + 1.0f;")
CPU_CASES = (
    BaseCase("cpu_correct", Expect.CORRECT, RELU_CLAMP),
    BaseCase("honest_fp32_kahan_sum", Expect.CORRECT, ("po[r] = sum;", "po[r] = sum + 1.0f;")),
    BaseCase("honest_faster_cpu_kernel", Expect.CORRECT, RELU_CLAMP),
    BaseCase("cpu_compile_error", Expect.COMPILE_ERROR),
    BaseCase("cpu_wrong_values", Expect.INCORRECT),
)


@dataclass(frozen=True)
class ProblemRef:
    name: str  # the service's name for it
    source: str  # the KernelBench-format reference file
    builtin: bool  # False: posted to the service before the run


@dataclass(frozen=True)
class Submission:
    index: int
    case: str
    expect: Expect
    problem: ProblemRef
    source: str  # the variant the service grades
    base_source: str  # the case's own file (the in-process protocol builds and times this one)


def problem_of(folder: Path) -> ProblemRef:
    local = folder / "problem.py"
    if local.exists():
        source = local.read_text()
        # Named by content: the cases that share a problem file share one problem.
        return ProblemRef(f"bench_{hashlib.sha256(source.encode()).hexdigest()[:12]}", source, builtin=False)
    from kernelgrade.problems import find_builtin

    name = (folder / "problem.txt").read_text().strip()
    builtin = find_builtin(name)
    if builtin is None:
        raise ValueError(f"{folder.name}: no built-in problem {name!r}")
    return ProblemRef(name, builtin.source, builtin=True)


def variant(source: str, index: int, expect: Expect, case: BaseCase) -> str:
    """The case's source with a line of its own in the C++/CUDA text, and the requested fault."""
    if ANCHOR not in source:
        raise ValueError(f"{case.folder}: no {ANCHOR.strip()!r} line to put the variant mark after")
    mark = f"// variant {index}\n"
    if expect is Expect.COMPILE_ERROR and case.gets is Expect.CORRECT:
        mark += f"int kg_variant_{index}_broken = ;\n"
    source = source.replace(ANCHOR, ANCHOR + mark, 1)
    if expect is Expect.INCORRECT and case.gets is Expect.CORRECT:
        if case.wrong is None or source.count(case.wrong[0]) != 1:
            raise ValueError(f"{case.folder}: the wrong-value replacement does not match exactly once")
        source = source.replace(*case.wrong)
    return source


def schedule(n: int, compile_errors: float, wrong: float, seed: int = 0) -> list[Expect]:
    """n outcomes in a fixed shuffled order; any nonzero fraction gets at least one, and one stays correct."""
    def count(fraction: float) -> int:
        return max(1, round(n * fraction)) if fraction > 0 else 0

    n_errors = min(count(compile_errors), n - 1)
    n_wrong = min(count(wrong), n - 1 - n_errors)
    kinds = [Expect.COMPILE_ERROR] * n_errors + [Expect.INCORRECT] * n_wrong
    kinds += [Expect.CORRECT] * (n - len(kinds))
    random.Random(seed).shuffle(kinds)
    return kinds


def pools(cases: tuple[BaseCase, ...]) -> dict[Expect, list[BaseCase]]:
    """Which cases can give each outcome: those that already do first, then correct ones with a fault."""
    correct = [c for c in cases if c.gets is Expect.CORRECT]
    return {
        Expect.CORRECT: correct,
        Expect.COMPILE_ERROR: [c for c in cases if c.gets is Expect.COMPILE_ERROR] + correct,
        Expect.INCORRECT: [c for c in cases if c.gets is Expect.INCORRECT] + [c for c in correct if c.wrong],
    }


def build_corpus(device: str, n: int, compile_errors: float, wrong: float) -> list[Submission]:
    """n distinct submissions; each outcome's cases are taken in turn."""
    by_outcome = pools(CUDA_CASES if device == "cuda" else CPU_CASES)
    taken = dict.fromkeys(Expect, 0)
    corpus = []
    for index, expect in enumerate(schedule(n, compile_errors, wrong)):
        pool = by_outcome[expect]
        corpus.append(case_submission(index, pool[taken[expect] % len(pool)], expect))
        taken[expect] += 1
    return corpus


def case_submission(index: int, case: BaseCase, expect: Expect) -> Submission:
    """Submission `index` of the stream: a variant of the case's kernel that gives `expect`."""
    folder = CASES / case.folder
    base = (folder / "submission.py").read_text()
    return Submission(index, case.folder, expect, problem_of(folder), variant(base, index, expect, case), base)


# In a mixed stream, every this many submissions one is a real load_inline kernel from the cases (on problems of
# its own), so builds run in the stream as they do in users' streams; the others are KernelBench references.
KERNEL_EVERY = 4


def as_model_new(source: str) -> str:
    """A reference, renamed: `Model` becomes `ModelNew` wherever the name stands alone (its class statement,
    a `super(Model, self)` call). It computes exactly the reference: correct at about 1x by construction."""
    return re.sub(r"\bModel\b", "ModelNew", source)


def mixed_corpus(problems: list[ProblemRef], device: str, n: int) -> list[Submission]:
    """n submissions over distinct problems: KernelBench references renamed ModelNew, one per problem in the
    order given, and every KERNEL_EVERY-th a correct load_inline kernel of the cases (each a distinct build)."""
    kernels = pools(CUDA_CASES if device == "cuda" else CPU_CASES)[Expect.CORRECT]
    references = iter(problems)
    corpus: list[Submission] = []
    for index in range(n):
        if index % KERNEL_EVERY == KERNEL_EVERY - 1:
            corpus.append(case_submission(index, kernels[(index // KERNEL_EVERY) % len(kernels)], Expect.CORRECT))
            continue
        problem = next(references, None)
        if problem is None:
            raise ValueError(f"{n} submissions need {n - n // KERNEL_EVERY} problems; the folder has {len(problems)}")
        source = as_model_new(problem.source)
        corpus.append(Submission(index, f"reference:{problem.name}", Expect.CORRECT, problem, source, source))
    return corpus
