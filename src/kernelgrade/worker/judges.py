"""Which judges the embedded pool runs: one per visible GPU, or one CPU judge when there is none.

Routing keys: a job asks for its problem's device kind ("cpu" or "cuda") or a device class ("cuda-h100").
A GPU judge serves its class and "cuda"; the first GPU judge also serves "cpu", so a GPU host grades CPU
problems too, one at a time. A CPU judge serves "cpu".
"""

from __future__ import annotations

from dataclasses import dataclass

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

    @property
    def serves(self) -> tuple[str, ...]:
        return tuple(key for key, _ in self.routes)


def discover_judges(requested: int) -> list[JudgeSlot]:
    """`requested` < 0: one per visible GPU (or one CPU judge); otherwise at most that many GPU judges."""
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
        usable = torch.cuda.get_device_properties(device).total_memory - CONTEXT_RESERVE_BYTES
        slots.append(JudgeSlot(f"gpu{index}", "cuda", index, cls, torch.cuda.get_device_name(device), routes,
                               usable))
    return slots
