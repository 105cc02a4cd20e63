"""A task the broker lost before any worker claimed its job (a restart without persistence, say): the job
stays queued with no lease, and the workers' reaper sends it again. Runs once per broker."""

from __future__ import annotations

from kernelgrade.config import Settings
from kernelgrade.worker.celery_app import make_celery
from tests.scaleout.conftest import ClusterFactory
from tests.scaleout.test_celery_workers import variant

# Small, so the reaper (every lease / 3 = 1 s here) finds the job as soon as a worker runs.
RESEND_AFTER_S = "2"
# A worker's start plus one fast CPU job: seconds on an idle machine, far more on a loaded 2-core one.
LOST_TASK_S = 240.0


def test_a_job_whose_task_was_lost_is_graded_anyway(cluster_factory: ClusterFactory, broker_url: str) -> None:
    cluster = cluster_factory(resend_queued_seconds=RESEND_AFTER_S)
    submitted = cluster.submit(variant(0))
    settings = Settings(broker_url=broker_url, queue_prefix=cluster.env_overrides["KERNELGRADE_QUEUE_PREFIX"])
    app = make_celery(settings, ("cpu",))
    try:
        assert app.control.purge() == 1  # the task the API sent is gone: only a resend can grade the job
    finally:
        app.close()
    worker = cluster.start_worker("w1")
    (done,) = cluster.wait_done([submitted["id"]], timeout=LOST_TASK_S)
    assert (done["verdict"], done["attempts"]) == ("correct", 1)
    cluster.stop()
    resends = worker.log().count(f"evaluation {done['id']} is still queued; its task may be lost")
    assert resends == 1, worker.log()[-3000:]
