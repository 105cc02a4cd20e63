"""Checks made on the submission's text before anything runs; a failure here is `rejected`."""

from __future__ import annotations

import ast
from dataclasses import dataclass

from kernelgrade.evaluator.result import Failure, Stage


@dataclass(frozen=True)
class ForwardShape:
    """The positional parameters forward() accepts (self excluded)."""

    required: int
    accepted: int | None  # None: takes *args

    def admits(self, count: int) -> bool:
        return self.required <= count and (self.accepted is None or count <= self.accepted)


def validate_submission(source: str | bytes, reference_source: str, max_bytes: int) -> Failure | None:
    """Reject what cannot possibly be graded, naming the line and the fix."""
    text_or_failure = _as_text(source, max_bytes)
    if isinstance(text_or_failure, Failure):
        return text_or_failure
    try:
        tree = ast.parse(text_or_failure)
    except SyntaxError as exc:
        return _reject("syntax_error", f"line {exc.lineno}: {exc.msg}. Fix the Python syntax and submit again.",
                       line=exc.lineno, detail=(exc.text or "").rstrip())
    model_new = _top_level_class(tree, "ModelNew")
    if model_new is None and not _assigns(tree, "ModelNew"):
        return _reject("missing_model_new",
                       "the file defines no top-level `ModelNew`. Define `class ModelNew(nn.Module)` with the"
                       " same constructor and forward() arguments as the reference `Model`.")
    return _check_forward(model_new, reference_source)


def _as_text(source: str | bytes, max_bytes: int) -> str | Failure:
    raw = source.encode() if isinstance(source, str) else source
    if len(raw) > max_bytes:
        return _reject("too_large", f"the file is {len(raw)} bytes; the limit is {max_bytes}. Submit only the"
                       " ModelNew module, without embedded data.")
    if b"\x00" in raw:
        return _reject("not_text", "the file contains NUL bytes; submit a Python source file.")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return _reject("not_text", f"the file is not UTF-8 text (byte {exc.start}); submit a Python source file.")


def _check_forward(model_new: ast.ClassDef | None, reference_source: str) -> Failure | None:
    reference = _top_level_class(ast.parse(reference_source), "Model")
    ref_shape = _forward_shape(reference) if reference else None
    new_shape = _forward_shape(model_new) if model_new else None
    if ref_shape is None or new_shape is None or model_new is None:
        return None  # inherited or dynamic forward: let the run decide
    if new_shape.admits(ref_shape.required):
        return None
    forward = next(n for n in model_new.body if isinstance(n, ast.FunctionDef) and n.name == "forward")
    wanted = ref_shape.required
    return _reject("signature_mismatch",
                   f"line {forward.lineno}: ModelNew.forward takes {new_shape.required} input(s) but the"
                   f" reference's forward takes {wanted}. Give forward() the reference's arguments.",
                   line=forward.lineno)


def _forward_shape(cls: ast.ClassDef) -> ForwardShape | None:
    for node in cls.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name == "forward":
            args = node.args
            positional = [*args.posonlyargs, *args.args][1:]  # drop self
            required = len(positional) - len(args.defaults)
            return ForwardShape(required, None if args.vararg else len(positional))
    return None


def _top_level_class(tree: ast.Module, name: str) -> ast.ClassDef | None:
    found = None
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == name:
            found = node
    return found


def _assigns(tree: ast.Module, name: str) -> bool:
    for node in tree.body:
        targets = node.targets if isinstance(node, ast.Assign) else []
        if any(isinstance(t, ast.Name) and t.id == name for t in targets):
            return True
        if isinstance(node, ast.ImportFrom) and any((a.asname or a.name) == name for a in node.names):
            return True
    return False


def _reject(code: str, message: str, *, line: int | None = None, detail: str = "") -> Failure:
    return Failure(Stage.VALIDATE, code, message, detail=detail, line=line)
