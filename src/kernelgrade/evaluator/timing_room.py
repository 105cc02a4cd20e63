"""How many of an evaluation's timing input sets its two run children can hold on the device at once.

While the candidate is timed, two children of the judge hold the timing input sets on its device: the
candidate's, which also keeps a sample of its timed outputs for the re-check, and the reference's own
(reference_child.py), which keeps none. On KernelBench's largest problems three sets in each did not fit
beside the judge: 45_Average_Pooling_2D has 16 GiB inputs, so 64 GiB a child with the rep's scaled copy, and
both children with the judge's own memory came to more than an H200's 140 GiB. Such a problem is timed on
fewer sets, at least one: each rep still scales its set by one of 4096 factors (timing.SCALE_STEPS), so no
two reps in a row see the same values, and the method record gives the number used.
"""

from __future__ import annotations

from dataclasses import dataclass

from kernelgrade.evaluator import timing

# The children's timing memory may take this share of what is free on the device when timing starts: the
# activations inside forward() and the CUDA context of the reference's child come on top and are not known
# beforehand, as for the oracle (device_room.ORACLE_SHARE), but here the figure counts every large tensor a
# child holds between reps, so a larger share of the room is safe.
CHILDREN_SHARE = 0.8


@dataclass(frozen=True)
class TimingFootprint:
    """What a child holds per timing input set and per output, in bytes."""

    set_bytes: int  # the largest input set
    output_bytes: int  # the reference's outputs of one call

    def candidate(self, sets: int) -> int:
        """Its sets, one rep's scaled copy of a set and the rep's output, and the outputs kept for the re-check
        (the last of each set and a sample)."""
        kept = sets + timing.SAMPLED_OUTPUTS
        return (sets + 1) * self.set_bytes + (1 + kept) * self.output_bytes

    def reference(self, sets: int) -> int:
        return (sets + 1) * self.set_bytes + self.output_bytes

    def both(self, sets: int) -> int:
        return self.candidate(sets) + self.reference(sets)


def sets_that_fit(footprint: TimingFootprint, wanted: int, free_bytes: int) -> int:
    """The most sets, up to `wanted` and at least one, whose footprint in both children fits CHILDREN_SHARE of
    `free_bytes`."""
    room = free_bytes * CHILDREN_SHARE
    return next((n for n in range(wanted, 1, -1) if footprint.both(n) <= room), min(wanted, 1))
