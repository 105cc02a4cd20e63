"""Judges that share a GPU: slots of their own on one device."""

from __future__ import annotations

from dataclasses import replace

from kernelgrade.worker.judges import JudgeSlot, sharing

GPU = JudgeSlot("gpu1", "cuda", 1, "cuda-h100", "NVIDIA H100", (("cuda-h100", "cuda-h100"), ("cuda", "cuda-h100")),
                80 << 30, "6f1f2c3e-aaaa-bbbb-cccc-0123456789ab")


def test_judges_sharing_a_gpu_differ_only_in_their_names() -> None:
    slots = sharing(GPU, 3)
    assert [slot.name for slot in slots] == ["gpu1", "gpu1.1", "gpu1.2"]
    assert all(slot.shares_device for slot in slots)  # so each takes the device's lock
    assert all(replace(slot, name=GPU.name) == replace(GPU, judges_on_device=3) for slot in slots)


def test_one_judge_per_gpu_is_the_gpus_own_slot_and_takes_no_lock() -> None:
    assert sharing(GPU, 1) == [GPU] and not GPU.shares_device
