"""Verdict cases as data: each folder under tests/cases holds a submission, its problem and the verdict
a careful grader gives it (expected.json). The grader must give that verdict and survive every case."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pytest

from kernelgrade.evaluator import Severity, Verdict, evaluate
from kernelgrade.evaluator.sandbox import make_launcher
from kernelgrade.problems import find_builtin, load_problem_source
from tests.conftest import RequestFactory

CASES = Path(__file__).parent / "cases"


@dataclass(frozen=True)
class Case:
    name: str
    folder: Path
    verdict: Verdict
    code: str | None
    finding: str | None
    message_contains: str | None
    timing: bool
    sandbox: str

    @classmethod
    def read(cls, folder: Path) -> Case:
        expected = json.loads((folder / "expected.json").read_text())
        return cls(folder.name, folder, Verdict(expected["verdict"]), expected.get("code"), expected.get("finding"),
                   expected.get("message_contains"), bool(expected.get("timing", False)),
                   str(expected.get("sandbox", "auto")))

    def problem(self):  # type: ignore[no-untyped-def]
        local = self.folder / "problem.py"
        if local.exists():
            return load_problem_source(local.read_text(), f"{self.name}_problem").spec()
        builtin = find_builtin((self.folder / "problem.txt").read_text().strip())
        assert builtin is not None, f"{self.name}: unknown built-in problem"
        return builtin.spec()

    @property
    def marks(self) -> list[pytest.MarkDecorator]:
        device = self.problem().device.value
        return [pytest.mark.gpu] if device == "cuda" else []


def _cases() -> list[pytest.param]:  # type: ignore[valid-type]
    folders = sorted(p for p in CASES.iterdir() if (p / "expected.json").exists())
    return [pytest.param(case, id=case.name, marks=case.marks) for case in map(Case.read, folders)]


@pytest.mark.parametrize("case", _cases())
def test_case_gets_expected_verdict(case: Case, make_request: RequestFactory) -> None:
    source = (case.folder / "submission.py").read_bytes().decode("utf-8", errors="surrogateescape")
    request = make_request(case.problem(), source, measure_timing=case.timing)
    result = evaluate(request, make_launcher(case.sandbox))
    explanation = f"{result.verdict}: {result.failure}\nfindings: {result.findings}\n{result.child_output[-2000:]}"
    assert result.verdict is case.verdict, explanation
    if case.code:
        assert result.failure is not None and result.failure.code == case.code, explanation
    if case.message_contains:
        assert result.failure is not None and case.message_contains in result.failure.message, explanation
    if case.finding:
        assert case.finding in {f.code for f in result.findings}, explanation
    if case.verdict is Verdict.CORRECT:
        assert not [f for f in result.findings if f.severity is Severity.FLAG], explanation
        if case.timing:
            assert result.speedup is not None and result.speedup > 0
