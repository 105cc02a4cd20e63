"""Which judges the embedded pool runs: one per visible GPU (or KERNELGRADE_JUDGES_PER_GPU each), or one CPU judge
when there is none. Judges that share a GPU keep out of each other's measurements through its lock
(evaluator/host/device_lock.py).

Routing keys: a job asks for its problem's device kind ("cpu" or "cuda") or a device class ("cuda-h100").
A GPU judge serves its class and "cuda"; the first GPU judge also serves "cpu", so a GPU host grades CPU
problems too, one at a time. A CPU judge serves "cpu".
"""

from __future__ import annotations

from dataclasses import dataclass, replace

# What the CUDA context, cuBLAS and cuDNN workspaces and the timing loop's L2 flush buffer take of a card
# before the judge allocates anything: about a gigabyte on an H100.
CONTEXT_RESERVE_BYTES = 1024**3


@dataclass(frozen=True)
class JudgeSlot:
    name: str
    kind: str  # "cpu" or "cuda"
    device_index: int
    device_class: str
    device_name: str
    # routing key -> the device class a job taken under that key is graded (and recorded) on
    routes: tuple[tuple[str, str], ...]
    # What a judge can allocate on its card (the card's memory less CONTEXT_RESERVE_BYTES); None on the CPU.
    memory_bytes: int | None = None
    # The GPU's UUID, which names its lock; "" on the CPU.
    device_uuid: str = ""
    # Judges grading on the slot's device, this one included; where there are several, they take its lock.
    judges_on_device: int = 1

    @property
    def shares_device(self) -> bool:
        return self.kind == "cuda" and self.judges_on_device > 1

    @property
    def serves(self) -> tuple[str, ...]:
        return tuple(key for key, _ in self.routes)


def discover_judges(requested: int, per_gpu: int = 1) -> list[JudgeSlot]:
    """`requested` < 0: every visible GPU (or one CPU judge); otherwise at most that many GPUs; `per_gpu`
    judges on each."""
    import torch

    from kernelgrade.evaluator.host.environment import device_class

    count = torch.cuda.device_count()
    if requested >= 0:
        count = min(count, requested)
    cpu_class = device_class(torch.device("cpu"))
    if count == 0:
        return [JudgeSlot("cpu0", "cpu", 0, cpu_class, "cpu", ((cpu_class, cpu_class), ("cpu", cpu_class)))]
    slots = []
    for index in range(count):
        device = torch.device("cuda", index)
        cls = device_class(device)
        routes = ((cls, cls), ("cuda", cls)) + ((("cpu", cpu_class),) if index == 0 else ())
        properties = torch.cuda.get_device_properties(device)
        gpu = JudgeSlot(f"gpu{index}", "cuda", index, cls, torch.cuda.get_device_name(device), routes,
                        properties.total_memory - CONTEXT_RESERVE_BYTES, str(getattr(properties, "uuid", index)))
        slots += sharing(gpu, per_gpu)
    return slots


def sharing(slot: JudgeSlot, judges: int) -> list[JudgeSlot]:
    """`judges` judges on `slot`'s device: the first under its name, the others as gpu0.1, gpu0.2 ..."""
    shared = replace(slot, judges_on_device=judges)
    return [shared, *(replace(shared, name=f"{slot.name}.{k}") for k in range(1, judges))]
