"""The load stage: the run child imports the submission and builds ModelNew from the constructor inputs."""

from __future__ import annotations

from kernelgrade.evaluator.host.session import RunSession
from kernelgrade.evaluator.integrity.crosscheck import integrity_findings
from kernelgrade.evaluator.integrity.proctree import TreeCount, count_tree
from kernelgrade.evaluator.judge.job import Job, SubmissionFiles
from kernelgrade.evaluator.judge.record import Record
from kernelgrade.evaluator.result import Stage
from kernelgrade.evaluator.wire.prebuilt import Prebuilt


def load_model(job: Job, record: Record, session: RunSession, files: SubmissionFiles,
               prebuilt: tuple[Prebuilt, ...]) -> TreeCount | None:
    """Returns the judge's count of the child's process tree once loaded: the baseline that later counts
    are compared with, so threads the harness and the extensions start while loading are not held
    against the submission."""
    request = job.request
    with job.in_stage(Stage.LOAD, "loading ModelNew"):
        record.note(integrity_findings(session.load(files.submission, files.init_inputs, request.trials.seed,
                                                    job.child_device, prebuilt, request.limits.load_s)))
        return count_tree(session.child.proc.pid)
