"""Scale-out on loopback: `kernelgrade worker` processes fed by a real broker (Redis and RabbitMQ), the
job state in a real Postgres. Each test runs once per broker."""

from __future__ import annotations

import time
from collections import Counter

from tests.scaleout.cluster import Cluster
from tests.scaleout.conftest import ClusterFactory
from tests.scaleout.crashing_worker import CRASH_MARK
from tests.service.servers import wait_until

# The full twenty on the default broker; RabbitMQ repeats the same path with fewer jobs, since each CPU
# job costs seconds of this 2-core machine and the suite must stay within minutes.
SUBMISSIONS = {"redis": 20, "rabbitmq": 6}
EXPRESSIONS = ("torch.clamp_min(a + b, 0.0)", "torch.relu(a + b)", "(a + b).clamp(min=0.0)",
               "torch.clamp_min(b + a, 0.0)")


def variant(index: int, body: str = "") -> str:
    """A fast, correct ModelNew; sources differ so none is a duplicate of another."""
    expression = EXPRESSIONS[index % len(EXPRESSIONS)]
    return (f"# variant {index}\nimport torch\nimport torch.nn as nn\n\n\nclass ModelNew(nn.Module):\n"
            f"    def forward(self, a, b):\n{body}        return {expression}\n")


def slow_variant(index: int) -> str:
    """Correct, but each call sleeps: long enough to kill its worker mid-job."""
    return "import time\n" + variant(index, "        time.sleep(0.4)\n")


def graded_by(cluster: Cluster) -> Counter[int]:
    """Stops the workers first: a judge commits a result before it logs it, so a log read as soon as the
    API shows the verdict may miss the last line."""
    cluster.stop()
    return Counter(i for worker in cluster.workers for i in worker.graded())


def test_two_workers_grade_twenty_submissions_once_each(cluster_factory: ClusterFactory, broker_url: str) -> None:
    cluster = cluster_factory()
    count = SUBMISSIONS["redis" if broker_url.startswith("redis") else "rabbitmq"]
    first = cluster.submit(variant(0))
    assert any("no worker for device 'cpu'" in w for w in first["warnings"]), first["warnings"]
    one, two = cluster.start_worker("w1"), cluster.start_worker("w2")
    listed = {w["pid"]: w for w in cluster.workers_listed()}
    assert {one.pid, two.pid} <= set(listed)
    assert listed[one.pid]["device_class"] == "cpu-x86_64"
    assert {"kernelgrade", "torch"} <= set(listed[one.pid]["versions"])
    second = cluster.submit(variant(1))
    assert second["warnings"] == []
    ids = [first["id"], second["id"]] + [cluster.submit(variant(i))["id"] for i in range(2, count)]
    done = cluster.wait_done(ids)
    assert [e["verdict"] for e in done] == ["correct"] * count, [(e["id"], e["verdict"], e["failure"], e["findings"])
                                                                 for e in done if e["verdict"] != "correct"]
    assert [e["attempts"] for e in done] == [1] * count
    counts = graded_by(cluster)
    assert sorted(counts) == sorted(e["id"] for e in done) and set(counts.values()) == {1}
    assert one.graded() and two.graded(), "both workers should have taken jobs"


def test_a_job_of_a_killed_worker_is_finished_by_the_other(cluster_factory: ClusterFactory) -> None:
    cluster = cluster_factory()
    workers = [cluster.start_worker("w1"), cluster.start_worker("w2")]
    slow = cluster.submit(slow_variant(0))["id"]
    fast = [cluster.submit(variant(i))["id"] for i in range(1, 5)]
    wait_until(lambda: any(w["current_evaluation_id"] == cluster.evaluation(slow)["id"]
                           for w in cluster.workers_listed()), 60.0, "the slow job to start")
    holder = next(w for w in cluster.workers_listed() if w["current_evaluation_id"] == cluster.evaluation(slow)["id"])
    victim = next(w for w in workers if w.pid == holder["pid"])
    victim.kill()
    done = cluster.wait_done([slow, *fast])
    assert [e["verdict"] for e in done] == ["correct"] * 5
    assert [e["attempts"] for e in done] == [2, 1, 1, 1, 1]
    counts = graded_by(cluster)
    assert sorted(counts) == sorted(e["id"] for e in done) and set(counts.values()) == {1}
    survivor = next(w for w in workers if w is not victim)
    assert done[0]["id"] in survivor.graded()


def test_a_job_that_kills_every_worker_stops_at_the_attempt_cap(cluster_factory: ClusterFactory) -> None:
    cluster = cluster_factory(max_attempts="2")
    deadly = cluster.submit(variant(0, f"        # {CRASH_MARK}\n"))["id"]
    after = cluster.submit(variant(1))["id"]
    deaths = 0
    # Not waited for: the deadly job is already queued, so the worker may die before it shows as listening.
    worker = cluster.start_worker("crashy", crashing=True, wait=False)
    while cluster.evaluation(deadly)["status"] != "done":
        if worker.process.poll() is not None:  # restart it, as compose's `restart: always` would
            deaths += 1
            assert deaths <= 2, f"the job was tried more than the cap allows\n{worker.log()}"
            worker = cluster.start_worker("crashy", crashing=True, wait=False)
        time.sleep(0.5)
    final, other = cluster.wait_done([deadly, after])
    assert (final["verdict"], final["attempts"], final["failure"]["code"]) == ("error", 2, "attempts_exhausted")
    assert "stopped before it finished" in final["failure"]["message"]
    assert other["verdict"] == "correct"
    assert deaths == 2
