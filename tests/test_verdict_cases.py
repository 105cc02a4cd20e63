"""Verdict cases as data: each folder under tests/cases holds a submission, its problem and the verdict
a careful grader gives it (expected.json). The grader must give that verdict and survive every case."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from kernelgrade.evaluator import EvalRequest, EvalResult, Interleave, Severity, Verdict, Warm, evaluate
from kernelgrade.evaluator.sandbox.launcher import Launcher
from kernelgrade.evaluator.sandbox.levels import SandboxOptions, SandboxUnavailable, make_launcher
from kernelgrade.problems import find_builtin, load_problem_source
from tests.conftest import TEST_LIMITS, RequestFactory

CASES = Path(__file__).parent / "cases"


@dataclass(frozen=True)
class Case:
    name: str
    folder: Path
    verdict: Verdict
    code: str | None
    stage: str | None  # the failure's stage (compile, load, correctness, ...)
    finding: str | None
    message_contains: str | None
    # Text that must appear nowhere in the failure's message and detail or in the compile log (a host
    # file's contents that a compiler error would quote).
    message_absent: str | None
    timing: bool
    sandbox: str
    # What the grader's side holds while the case runs (adversarial cases try to reach it):
    # {"environment": {NAME: VALUE}, "work_root_files": {RELATIVE_PATH: TEXT}, "listen_tcp": [PORT, ...]},
    # "data_dir_files": {RELATIVE_PATH: TEXT} in the data dir holding the work root (hidden from children
    # as the service hides its own), "cache_files": {RELATIVE_PATH: TEXT} in the compile cache,
    # "sandbox_memory_mib": a memory cap small enough to be reached within the test's call deadline,
    # "sandbox_file_mib": a file-size limit (RLIMIT_FSIZE) below the outputs' size,
    # and "limits": {FIELD: SECONDS} replacing fields of the tests' Limits, for a case that runs to a limit.
    setup: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def read(cls, folder: Path) -> Case:
        expected = json.loads((folder / "expected.json").read_text())
        return cls(folder.name, folder, Verdict(expected["verdict"]), expected.get("code"), expected.get("stage"),
                   expected.get("finding"),
                   expected.get("message_contains"), expected.get("message_absent"),
                   bool(expected.get("timing", False)), str(expected.get("sandbox", "auto")),
                   dict(expected.get("setup", {})))

    def problem(self):  # type: ignore[no-untyped-def]
        local = self.folder / "problem.py"
        if local.exists():
            return load_problem_source(local.read_text(), f"{self.name}_problem").spec()
        builtin = find_builtin((self.folder / "problem.txt").read_text().strip())
        assert builtin is not None, f"{self.name}: unknown built-in problem"
        return builtin.spec()

    def request(self, make_request: RequestFactory) -> EvalRequest:
        """The case's submission as a request for its problem, with the tests' limits and its own in place."""
        source = (self.folder / "submission.py").read_bytes().decode("utf-8", errors="surrogateescape")
        limits = dataclasses.replace(TEST_LIMITS, **self.setup.get("limits", {}))
        return make_request(self.problem(), source, measure_timing=self.timing, limits=limits)

    @property
    def marks(self) -> list[pytest.MarkDecorator]:
        device = self.problem().device.value
        return [pytest.mark.gpu] if device == "cuda" else []


def _cases() -> list[pytest.param]:  # type: ignore[valid-type]
    folders = sorted(p for p in CASES.iterdir() if (p / "expected.json").exists())
    return [pytest.param(case, id=case.name, marks=case.marks) for case in map(Case.read, folders)]


@pytest.mark.parametrize("case", _cases())
def test_case_gets_expected_verdict(case: Case, make_request: RequestFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    _check(case, _graded(case, make_request, monkeypatch))


# The cases that reach the timing stage, graded with both sides timed in turn on one CPU
# (evaluator/judge/interleaved.py): every check of a timed phase applies to the pooled rounds.
TIMED_CASES = [p for p in _cases() if p.values[0].timing]


@pytest.mark.parametrize("case", TIMED_CASES)
def test_a_case_timed_in_turn_gets_the_same_verdict(case: Case, make_request: RequestFactory,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    _check(case, _graded(case, make_request, monkeypatch, Interleave.ON))


def _graded(case: Case, make_request: RequestFactory, monkeypatch: pytest.MonkeyPatch,
            interleave: Interleave = Interleave.AUTO) -> EvalResult:
    request = case.request(make_request)
    request = dataclasses.replace(request, timing=dataclasses.replace(request.timing, interleave=interleave))
    launcher = _launcher(case, data_dir=request.work_root.parent)
    _plant(case.setup.get("cache_files", {}), request.cache_dir)
    with _arranged(case.setup, request.work_root, monkeypatch):
        return evaluate(request, launcher)


# Cases that need nothing arranged around them but their limits, graded one after another by one judge that
# keeps warm run children and references between evaluations, as the service's judges do.
WARM_CASES = [p for p in _cases() if set(p.values[0].setup) <= {"limits"} and p.values[0].sandbox == "auto"]


@pytest.fixture(scope="module")
def warm_judge(tmp_path_factory: pytest.TempPathFactory, compile_cache: Path) -> Iterator[tuple[Launcher, Warm]]:
    launcher = make_launcher("auto")
    warm = Warm.keeping(launcher, tmp_path_factory.mktemp("warm-work"), compile_cache)
    yield launcher, warm
    warm.close()


@pytest.mark.parametrize("case", WARM_CASES)
def test_a_warm_judge_gives_the_same_verdict(case: Case, make_request: RequestFactory,
                                             warm_judge: tuple[Launcher, Warm]) -> None:
    launcher, warm = warm_judge
    result = evaluate(case.request(make_request), launcher, warm=warm)
    _check(case, result)


def _check(case: Case, result: EvalResult) -> None:
    explanation = f"{result.verdict}: {result.failure}\nfindings: {result.findings}\n{result.child_output[-2000:]}"
    assert result.verdict is case.verdict, explanation
    if case.code:
        assert result.failure is not None and result.failure.code == case.code, explanation
    if case.stage:
        assert result.failure is not None and result.failure.stage.value == case.stage, explanation
    if case.message_contains:
        assert result.failure is not None and case.message_contains in result.failure.message, explanation
    if case.message_absent:
        failure = result.failure
        shown = {"message": failure.message if failure else "", "detail": failure.detail if failure else "",
                 "compile log": result.compile_log}
        assert not [k for k, text in shown.items() if case.message_absent in text], f"{shown}\n{explanation}"
    if case.finding:
        assert case.finding in {f.code for f in result.findings}, explanation
    if case.verdict is Verdict.CORRECT:
        assert not [f for f in result.findings if f.severity is Severity.FLAG], explanation
        if case.timing:
            assert result.speedup is not None and result.speedup > 0


def _launcher(case: Case, data_dir: Path) -> Launcher:
    memory_mib = case.setup.get("sandbox_memory_mib")
    chosen: dict[str, Any] = {"memory_bytes": int(memory_mib) * 1024 * 1024} if memory_mib else {}
    if case.setup.get("sandbox_file_mib"):
        chosen["file_bytes"] = int(case.setup["sandbox_file_mib"]) * 1024 * 1024
    if case.setup.get("data_dir_files"):
        # The service hides its data dir (database, other jobs' files) from every child; so does this case.
        _plant(case.setup["data_dir_files"], data_dir)
        chosen["hidden"] = (data_dir,)
    options = SandboxOptions(**chosen) if chosen else None
    try:
        launcher = make_launcher(case.sandbox, options=options)
    except SandboxUnavailable as exc:
        pytest.skip(f"the {case.sandbox!r} sandbox this case needs is unavailable here: {exc}")
    cgroups = getattr(launcher, "cgroups", None)
    if memory_mib and (cgroups is None or cgroups.memory_parent is None):
        pytest.skip(f"this case needs a memory cgroup: {cgroups.describe() if cgroups else 'none'}")
    return launcher


@contextlib.contextmanager
def _arranged(setup: dict[str, Any], work_root: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    secrets = dict(setup.get("environment", {}))
    for name, value in secrets.items():
        monkeypatch.setenv(name, value)
    _plant(setup.get("work_root_files", {}), work_root)
    with contextlib.ExitStack() as stack:
        for port in setup.get("listen_tcp", []):
            with contextlib.suppress(OSError):  # taken: a real service listens there, which serves as well
                stack.enter_context(socket.create_server(("127.0.0.1", int(port))))
        if secrets:
            stack.enter_context(_process_holding(secrets))
        yield


def _plant(files: dict[str, str], folder: Path) -> None:
    for relative, text in files.items():
        (folder / relative).parent.mkdir(parents=True, exist_ok=True)
        (folder / relative).write_text(text)


@contextlib.contextmanager
def _process_holding(secrets: dict[str, str]) -> Iterator[None]:
    """A process with the secrets in its initial environment, as the service's own processes have them:
    /proc/PID/environ shows only that, so the test process's setenv alone would not expose them."""
    holder = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"], env={**os.environ, **secrets})
    try:
        yield
    finally:
        holder.kill()
        holder.wait()
