"""The Celery application of dispatch = celery: one queue per routing key (a device class such as
`cuda-h100`, or a device kind `cuda` / `cpu`), tasks that carry only an evaluation id.

Delivery is at least once: a task is acknowledged after it ran (acks_late), given back if its worker
process is lost (reject_on_worker_lost), and a worker holds at most one unstarted task per judge
(prefetch multiplier 1), so a long job never strands another behind it. A task delivered twice is
harmless: the job is claimed through its database lease, and a job that is done or leased is skipped.
"""

from __future__ import annotations

from celery import Celery
from kombu import Queue

from kernelgrade.config import Settings

GRADE_TASK = "kernelgrade.grade"
# How long Redis waits for an unacknowledged task before giving it to another worker. Far longer than any
# job: a lost job is found sooner, through its expired lease (the reaper), so this only bounds how long a
# redelivery can be late, and never redelivers a task that is still running.
REDIS_VISIBILITY_S = 6 * 3600


def queue_name(settings: Settings, routing_key: str) -> str:
    return settings.queue_prefix + routing_key


def make_celery(settings: Settings, queues: tuple[str, ...] = ()) -> Celery:
    """`queues`: the routing keys a worker serves (their queues get the settings' prefix)."""
    app = Celery("kernelgrade", broker=settings.broker_url, set_as_current=False)
    app.conf.update(
        task_acks_late=True, task_reject_on_worker_lost=True, worker_prefetch_multiplier=1,
        task_queues=[Queue(queue_name(settings, key), routing_key=queue_name(settings, key)) for key in queues],
        task_default_queue="cpu", task_ignore_result=True, task_serializer="json", accept_content=["json"],
        broker_connection_retry_on_startup=True, worker_hijack_root_logger=False,
        broker_transport_options={"visibility_timeout": REDIS_VISIBILITY_S},
        worker_cancel_long_running_tasks_on_connection_loss=False,
    )
    return app


class CelerySender:
    """The API's side: sends the id of each queued job to the queue of its routing key."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.app = make_celery(settings)

    def send(self, evaluation_id: int, routing_key: str) -> None:
        queue = queue_name(self.settings, routing_key)
        self.app.send_task(GRADE_TASK, args=[evaluation_id], queue=queue, routing_key=queue)

    def close(self) -> None:
        self.app.close()
