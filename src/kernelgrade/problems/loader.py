"""Reading problem files: KernelBench format (`Model`, `get_inputs`, `get_init_inputs`) plus optional
metadata in a top-level literal `KERNELGRADE = {...}`, which KernelBench tooling simply ignores.

Metadata keys: device ("cuda" | "cpu"), precision ("fp32" | "tf32" | "tolerance"), atol, rtol,
flops, bytes, suite, level, tags, description, torch_ops ("report" | "forbid", default "report": whether a
submission that calls the torch operations computing the reference is only reported or flagged),
timing_flags ("strict" | "pytorch_default", default "strict": the precision switches both sides are timed
under; "pytorch_default" times with cuDNN TF32 on, as KernelBench's tables were measured). The
content hash covers the whole file, so a changed file is a new version.

Counting conventions of the built-in suite: `flops` counts the reference computation, 2 per multiply-add
in matmuls and convolutions and 1 per elementwise arithmetic operation or transcendental function (exp,
erf, tanh) per element; `bytes` is the least traffic any implementation needs: every input and learned
parameter read once, every output written once (buffers such as a constant mask are not counted).
"""

from __future__ import annotations

import ast
import hashlib
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any, TypeVar

from kernelgrade.evaluator.request import (
    DeviceKind,
    PrecisionKind,
    PrecisionPolicy,
    ProblemSpec,
    TimingFlags,
    TorchOps,
)

BUILTIN_DIR = Path(__file__).parent / "builtin"
META_NAME = "KERNELGRADE"
REQUIRED = ("Model", "get_inputs", "get_init_inputs")


class ProblemFormatError(ValueError):
    """The file is not a usable problem; the message says what is missing."""


Choice = TypeVar("Choice", bound=StrEnum)

@dataclass(frozen=True)
class Problem:
    name: str
    source: str
    suite: str
    level: int | None
    device: DeviceKind
    precision: PrecisionPolicy
    flops: float | None
    bytes_moved: float | None
    tags: tuple[str, ...]
    description: str
    content_hash: str
    torch_ops: TorchOps = TorchOps.REPORT
    timing_flags: TimingFlags = TimingFlags.STRICT

    def spec(self) -> ProblemSpec:
        return ProblemSpec(name=self.name, source=self.source, device=self.device, precision=self.precision,
                           flops=self.flops, bytes_moved=self.bytes_moved, content_hash=self.content_hash,
                           torch_ops=self.torch_ops, timing_flags=self.timing_flags)


def content_hash(source: str) -> str:
    return hashlib.sha256(source.encode()).hexdigest()


def load_problem_source(source: str, name: str, suite: str = "imported", level: int | None = None) -> Problem:
    try:
        tree = ast.parse(source)
    except SyntaxError as exc:
        raise ProblemFormatError(f"{name}: line {exc.lineno}: {exc.msg}") from exc
    defined = _top_level_names(tree)
    missing = [n for n in REQUIRED if n not in defined]
    if missing:
        raise ProblemFormatError(f"{name}: defines no {', '.join(missing)} (KernelBench format needs all three)")
    meta = _metadata(tree, name)
    try:
        return _problem(name, source, meta, suite, level, ast.get_docstring(tree) or "")
    except (ValueError, TypeError) as exc:
        raise ProblemFormatError(f"{name}: bad {META_NAME} value: {exc}") from exc


def _problem(name: str, source: str, meta: dict[str, Any], suite: str, level: int | None, doc: str) -> Problem:
    return Problem(
        name=name,
        source=source,
        suite=str(meta.get("suite", suite)),
        level=_opt_int(meta.get("level", level)),
        device=DeviceKind(str(meta.get("device", "cuda"))),
        precision=_policy(meta),
        flops=_opt_float(meta.get("flops")),
        bytes_moved=_opt_float(meta.get("bytes")),
        tags=_tags(meta.get("tags", ())),
        description=str(meta.get("description", doc)),
        content_hash=content_hash(source),
        torch_ops=_torch_ops(meta),
        timing_flags=_timing_flags(meta),
    )


def load_problem_file(path: Path, suite: str | None = None, level: int | None = None) -> Problem:
    return load_problem_source(path.read_text(encoding="utf-8"), path.stem, suite or "imported", level)


def builtin_problems() -> list[Problem]:
    problems = []
    for path in sorted(BUILTIN_DIR.glob("*/*.py")):
        if path.name.startswith("_"):
            continue
        problems.append(load_problem_file(path, suite=path.parent.name))
    return problems


def find_builtin(name: str) -> Problem | None:
    return next((p for p in builtin_problems() if p.name == name), None)


def resolve_problem(name_or_path: str) -> Problem:
    """A built-in problem by name, or a problem file by path."""
    path = Path(name_or_path)
    if path.suffix == ".py" or path.exists():
        if not path.is_file():
            raise ProblemFormatError(f"no problem file at {path}")
        return load_problem_file(path)
    found = find_builtin(name_or_path)
    if found is None:
        names = ", ".join(p.name for p in builtin_problems())
        raise ProblemFormatError(f"no built-in problem named {name_or_path!r}; known: {names}")
    return found


def _top_level_names(tree: ast.Module) -> set[str]:
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.ClassDef | ast.FunctionDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
    return names


def _metadata(tree: ast.Module, name: str) -> dict[str, Any]:
    """The KERNELGRADE dict, evaluated without running the file: literals, arithmetic, and the file's
    own top-level numeric constants (so FLOP counts can be written as `2 * N**3`)."""
    constants: dict[str, Any] = {}
    for node in tree.body:
        if not isinstance(node, ast.Assign) or len(node.targets) != 1 or not isinstance(node.targets[0], ast.Name):
            continue
        target = node.targets[0].id
        try:
            value = _evaluate(node.value, constants)
        except ValueError as exc:
            if target == META_NAME:
                raise ProblemFormatError(f"{name}: {META_NAME} must be a literal dict ({exc})") from exc
            continue
        if target == META_NAME:
            if not isinstance(value, dict):
                raise ProblemFormatError(f"{name}: {META_NAME} must be a dict")
            return value
        if isinstance(value, int | float):
            constants[target] = value
    return {}


_OPERATORS: dict[type, Any] = {
    ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b, ast.Mult: lambda a, b: a * b,
    ast.Div: lambda a, b: a / b, ast.FloorDiv: lambda a, b: a // b, ast.Pow: lambda a, b: a**b,
}
# Metadata is read from files nobody has run yet: `10**10**10` must not hang the loader.
_MAX_EXPONENT = 64


def _evaluate(node: ast.expr, constants: dict[str, Any]) -> Any:
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name) and node.id in constants:
        return constants[node.id]
    if isinstance(node, ast.BinOp) and type(node.op) in _OPERATORS:
        return _arithmetic(node, _evaluate(node.left, constants), _evaluate(node.right, constants))
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return -_number(_evaluate(node.operand, constants), node)
    if isinstance(node, ast.List | ast.Tuple):
        return [_evaluate(e, constants) for e in node.elts]
    if isinstance(node, ast.Dict):
        return {_evaluate(k, constants): _evaluate(v, constants) for k, v in zip(node.keys, node.values, strict=True)
                if k is not None}
    raise ValueError(f"unsupported expression on line {node.lineno}")


def _arithmetic(node: ast.BinOp, left: Any, right: Any) -> Any:
    left, right = _number(left, node), _number(right, node)
    if isinstance(node.op, ast.Pow) and abs(right) > _MAX_EXPONENT:
        raise ValueError(f"exponent {right} too large on line {node.lineno}")
    try:
        return _OPERATORS[type(node.op)](left, right)
    except ArithmeticError as exc:
        raise ValueError(f"{exc} on line {node.lineno}") from exc


def _number(value: Any, node: ast.expr) -> int | float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"arithmetic on a non-number on line {node.lineno}")
    return value


def _tags(value: Any) -> tuple[str, ...]:
    if isinstance(value, str):
        return (value,)
    if not isinstance(value, list | tuple):
        raise ValueError("tags must be a list of strings")
    return tuple(str(t) for t in value)


def _policy(meta: dict[str, Any]) -> PrecisionPolicy:
    kind = PrecisionKind(str(meta.get("precision", "fp32")))
    default_tol = 1e-2 if kind is PrecisionKind.TOLERANCE and meta.get("half") else 1e-4
    return PrecisionPolicy(kind=kind, atol=float(meta.get("atol", default_tol)),
                           rtol=float(meta.get("rtol", default_tol)))


def _timing_flags(meta: dict[str, Any]) -> TimingFlags:
    return _choice(meta, "timing_flags", TimingFlags, TimingFlags.STRICT)


def _torch_ops(meta: dict[str, Any]) -> TorchOps:
    return _choice(meta, "torch_ops", TorchOps, TorchOps.REPORT)


def _choice(meta: dict[str, Any], key: str, choices: type[Choice], default: Choice) -> Choice:
    value = meta.get(key, default.value)
    try:
        return choices(value)
    except ValueError:
        named = " or ".join(repr(c.value) for c in choices)
        raise ValueError(f"{key} must be {named}, not {value!r}") from None


def _opt_float(value: Any) -> float | None:
    return None if value is None else float(value)


def _opt_int(value: Any) -> int | None:
    return None if value is None else int(value)
