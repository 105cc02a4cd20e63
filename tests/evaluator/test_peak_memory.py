"""The peak device memory a result records for operators: the child's highest claim, the judge's own peak."""

from __future__ import annotations

import torch

from kernelgrade.evaluator.judge.outcome import peak_memory
from kernelgrade.evaluator.judge.record import Record
from kernelgrade.evaluator.wire.replies import Integrity


def _integrity(peak: int) -> Integrity:
    return Integrity(replaced_functions=(), precision_flags_changed=(), extra_threads=0, peak_device_bytes=peak)


def test_the_record_keeps_the_childs_highest_reported_peak() -> None:
    record = Record()
    assert record.child_reported(_integrity(5 << 20)) == []
    record.child_reported(_integrity(3 << 20))
    assert record.child_peak_bytes == 5 << 20


def test_a_cpu_evaluation_records_no_device_peaks() -> None:
    record = Record()
    record.child_reported(_integrity(0))
    assert peak_memory(torch.device("cpu"), record) == ()
