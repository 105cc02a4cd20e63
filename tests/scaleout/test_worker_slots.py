"""Which judges and queues a `kernelgrade worker` has, and how tasks borrow its judges."""

from __future__ import annotations

import threading
from typing import Any, cast

from kernelgrade.worker.judge import Judge
from kernelgrade.worker.judges import JudgeSlot
from kernelgrade.worker.remote_worker import JudgeDesk, WorkerOptions, worker_slots


def test_a_cpu_worker_serves_its_class_and_the_cpu_kind() -> None:
    (slot,) = worker_slots(WorkerOptions())
    assert slot.kind == "cpu" and set(slot.serves) == {slot.device_class, "cpu"}


def test_device_class_and_concurrency_are_the_operators_choice() -> None:
    slots = worker_slots(WorkerOptions(device_class="cpu-ci", concurrency=2))
    assert [s.name for s in slots] == ["cpu0", "cpu1"]
    assert all(s.routes == (("cpu-ci", "cpu-ci"), ("cpu", "cpu-ci")) for s in slots)


class FakeJudge:
    def __init__(self, name: str, serves: tuple[str, ...]) -> None:
        self.slot = JudgeSlot(name, "cuda", 0, "cuda-x", name, tuple((key, "cuda-x") for key in serves))


def test_the_desk_lends_each_judge_to_one_task_and_only_for_its_queues() -> None:
    gpu0, gpu1 = FakeJudge("gpu0", ("cuda", "cpu")), FakeJudge("gpu1", ("cuda",))
    desk = JudgeDesk(cast("list[Judge]", [gpu0, gpu1]))
    with desk.judge_for("tpu") as none:
        assert none is None
    order: list[Any] = []
    with desk.judge_for("cpu") as first:
        assert first is cast("Any", gpu0)
        waiting = threading.Thread(target=lambda: order.append(_borrow(desk, "cpu")))
        waiting.start()
        waiting.join(0.3)
        assert waiting.is_alive(), "gpu0 is lent: a second cpu task must wait for it"
        with desk.judge_for("cuda") as other:
            assert other is cast("Any", gpu1)
    waiting.join(5.0)
    assert order == ["gpu0"]


def _borrow(desk: JudgeDesk, key: str) -> str:
    with desk.judge_for(key) as judge:
        assert judge is not None
        return judge.slot.name


def test_the_desk_lends_a_judge_idle_long_enough_and_tasks_wait_for_it() -> None:
    gpu0 = FakeJudge("gpu0", ("cuda",))
    desk = JudgeDesk(cast("list[Judge]", [gpu0]))
    with desk.idle_judge(60.0) as none:
        assert none is None  # free only just now
    with desk.idle_judge(0.0) as idle:
        assert idle is cast("Any", gpu0)
        waiting = threading.Thread(target=lambda: _borrow(desk, "cuda"))
        waiting.start()
        waiting.join(0.3)
        assert waiting.is_alive(), "a task waits while the idle judge measures"
    waiting.join(5.0)
    with desk.idle_judge(1.0) as again:
        assert again is None  # the task just gave it back
