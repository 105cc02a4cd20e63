"""A judge's grading in a process of its own: one per judge, started with the judge and again after it ended.

Why: the judge's side of an evaluation is Python (the children's replies, the reference's outputs and float64
oracles, the comparisons, the re-check), and so is the API's. Judges that are threads of one process take
turns at the interpreter: on a 2-GPU host two such judges graded 1.79x one; in processes of their own, 1.93x
(docs/timing.md, "Where the measurements run").

The judge keeps everything else: claiming, the lease, recording and progress. It sends the grading process
one call at a time (`Evaluate`, `Prepare`, `MeasureBaseline`, with the request) and reads back `Progressed`
replies, then `Returned` with the result or `Raised` with the grader's own fault. The process keeps the
judge's warm children and references. A process that ends during a call (a crash in the judge's own CUDA
context, a kill) is a grader fault for that job, which goes back to the queue; the next call starts a new one.
When the judge's process is killed outright, an idle grading process reads the end of the pipe and stops with
its warm children; a busy one finishes its evaluation first (the evaluation's limits bound it) and stops when
it cannot send the result.
"""

from __future__ import annotations

import logging
import multiprocessing
import signal
import threading
import traceback
from dataclasses import dataclass
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from types import FrameType
from typing import TypeVar

from kernelgrade.evaluator import CompiledBaseline, EvalRequest, EvalResult, Preparation, Progress, ProgressFn
from kernelgrade.evaluator.cpu_threads import fit_to
from kernelgrade.logs import configure_logging
from kernelgrade.worker.grader import GraderSpec, InProcessGrader

log = logging.getLogger(__name__)

# How long a grading process may take to stop its warm children and exit once asked to: each child stops on
# request within a second on a quiet host, and a judge keeps up to eight spares and four references' children;
# one still there after this is killed (its sandboxed children die with it).
CLOSE_S = 15.0


@dataclass(frozen=True)
class Evaluate:
    request: EvalRequest


@dataclass(frozen=True)
class Prepare:
    request: EvalRequest


@dataclass(frozen=True)
class MeasureBaseline:
    request: EvalRequest


Call = Evaluate | Prepare | MeasureBaseline


@dataclass(frozen=True)
class Progressed:
    progress: Progress


@dataclass(frozen=True)
class Returned:
    value: EvalResult | Preparation | CompiledBaseline


@dataclass(frozen=True)
class Raised:
    error: str  # the exception's type and message
    traceback: str


Reply = Progressed | Returned | Raised
T = TypeVar("T", EvalResult, Preparation, CompiledBaseline)


class GradingProcessGone(RuntimeError):
    """The grading process ended before it answered."""


class GradingFault(RuntimeError):
    """The grader failed inside the grading process; its traceback is in the exception's notes."""


class ProcessGrader:
    """The judge's side: one call at a time, over a pipe to the grading process."""

    def __init__(self, spec: GraderSpec, name: str) -> None:
        self.spec, self.name = spec, name
        self._process: BaseProcess | None = None
        self._conn: Connection | None = None
        self._calling = threading.Lock()  # one call at a time, and no start during one
        self._closed = False

    @property
    def keeps_trials(self) -> bool:
        return self.spec.keeps_trials

    @property
    def pid(self) -> int | None:
        """The grading process's, while one runs."""
        process = self._process
        return process.pid if process is not None and process.is_alive() else None

    def start(self) -> None:
        with self._calling:
            self._started()

    def evaluate(self, request: EvalRequest, progress: ProgressFn) -> EvalResult:
        return self._call(Evaluate(request), EvalResult, progress)

    def prepare(self, request: EvalRequest) -> Preparation:
        return self._call(Prepare(request), Preparation)

    def measure_baseline(self, request: EvalRequest) -> CompiledBaseline:
        return self._call(MeasureBaseline(request), CompiledBaseline)

    def close(self) -> None:
        """Stop the process, during a call too: the call then raises GradingProcessGone. No other starts."""
        self._closed = True
        process = self._process
        if process is None or process.pid is None:
            return
        process.terminate()  # the process closes its warm children on the way out (serve_calls)
        process.join(CLOSE_S)
        if process.is_alive():
            log.warning("the grading process of judge %s did not stop within %.0f s; killing it", self.name,
                        CLOSE_S)
            process.kill()
            process.join()
        if self._calling.acquire(blocking=False):  # idle: nothing else will read the pipe again
            try:
                self._discard()
            finally:
                self._calling.release()

    def _call(self, call: Call, returns: type[T], progress: ProgressFn | None = None) -> T:
        with self._calling:
            conn = self._started()
            try:
                conn.send(call)
                return _answer(conn, returns, progress)
            except (EOFError, OSError) as exc:
                raise self._gone() from exc

    def _started(self) -> Connection:
        if self._conn is not None and self._process is not None and self._process.is_alive():
            return self._conn
        self._discard()
        if self._closed:
            raise GradingProcessGone("the judge stopped grading: its grading process was closed")
        context = multiprocessing.get_context("spawn")  # never fork a process with threads and a CUDA context
        ours, theirs = context.Pipe()
        process = context.Process(target=serve_calls, args=(theirs, self.spec), name=f"grading-{self.name}",
                                  daemon=True)
        process.start()
        theirs.close()
        self._process, self._conn = process, ours
        log.info("judge %s grades in process %d", self.name, process.pid)
        return ours

    def _gone(self) -> GradingProcessGone:
        process = self._process
        if process is not None:
            process.join(CLOSE_S)
        code = process.exitcode if process is not None else None
        self._discard()
        if not self._closed:
            log.warning("the grading process of judge %s ended during a call (exit code %s); the next call starts"
                        " another", self.name, code)
        return GradingProcessGone(f"the judge's grading process ended during the evaluation (exit code {code});"
                                  " the job is retried in a new one")

    def _discard(self) -> None:
        if self._conn is not None:
            self._conn.close()
        self._process, self._conn = None, None


def _answer(conn: Connection, returns: type[T], progress: ProgressFn | None) -> T:
    while True:
        reply = conn.recv()
        if isinstance(reply, Progressed):
            if progress is not None:
                progress(reply.progress)
            continue
        if isinstance(reply, Returned) and isinstance(reply.value, returns):
            return reply.value
        if isinstance(reply, Raised):
            fault = GradingFault(reply.error)
            fault.add_note(reply.traceback)
            raise fault
        raise GradingFault(f"the grading process answered {type(reply).__name__} where a {returns.__name__}"
                           " was due")


def serve_calls(conn: Connection, spec: GraderSpec) -> None:
    """The grading process: answer the judge's calls until the judge closes the pipe or stops the process."""
    # Ctrl-C reaches the whole foreground process group; the server stops this process itself, once it has
    # handed the running job back.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, _exit)
    configure_logging(spec.settings.log_level)
    if spec.kind == "cuda" and spec.measure:
        fit_to(len(spec.measure))  # torch's own pool on the judge's cores alone, as in the server's process
    grader = InProcessGrader(spec)
    sending = threading.Lock()  # progress may come from the evaluator's threads

    def send(reply: Reply) -> None:
        with sending:
            conn.send(reply)

    try:
        while True:
            try:
                call = conn.recv()
            except EOFError:
                return
            send(_handled(grader, call, lambda progress: send(Progressed(progress))))
    finally:
        grader.close()


def _handled(grader: InProcessGrader, call: Call, progress: ProgressFn) -> Reply:
    try:
        if isinstance(call, Evaluate):
            return Returned(grader.evaluate(call.request, progress))
        if isinstance(call, Prepare):
            return Returned(grader.prepare(call.request))
        return Returned(grader.measure_baseline(call.request))
    except Exception as exc:
        return Raised(f"{type(exc).__name__}: {exc}", traceback.format_exc())


def _exit(signum: int, frame: FrameType | None) -> None:
    raise SystemExit(128 + signum)
