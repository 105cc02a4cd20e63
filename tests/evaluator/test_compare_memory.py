"""The comparison's memory arithmetic: bytes per element per policy, and the chunk size from free memory."""

from __future__ import annotations

from kernelgrade.evaluator.compare_memory import (
    MIN_CHUNK_ELEMENTS,
    ORACLE_BYTES_PER_ELEMENT,
    TOLERANCE_BYTES_PER_ELEMENT,
    USABLE_SHARE,
    bytes_per_element,
    plan_chunks,
)

GiB = 1024**3


def test_bytes_per_element_by_policy() -> None:
    assert bytes_per_element(exact=True, has_oracle=True) == 0
    assert bytes_per_element(exact=False, has_oracle=True) == ORACLE_BYTES_PER_ELEMENT
    assert bytes_per_element(exact=False, has_oracle=False) == TOLERANCE_BYTES_PER_ELEMENT
    assert ORACLE_BYTES_PER_ELEMENT > TOLERANCE_BYTES_PER_ELEMENT > 0


def test_an_output_that_fits_is_compared_whole() -> None:
    plan = plan_chunks(1000, 112, device_free=1 * GiB, host_free=1 * GiB)
    assert plan.whole and plan.chunks == 1 and not plan.on_host


def test_the_chunk_is_the_largest_that_fits_the_usable_share() -> None:
    numel = 900_000_000  # the 3.6 GB fp32 output that ran the judge out of device memory
    plan = plan_chunks(numel, ORACLE_BYTES_PER_ELEMENT, device_free=20 * GiB, host_free=100 * GiB)
    assert not plan.whole and not plan.on_host
    assert plan.elements == int(20 * GiB * USABLE_SHARE) // ORACLE_BYTES_PER_ELEMENT
    assert plan.elements * ORACLE_BYTES_PER_ELEMENT <= 20 * GiB * USABLE_SHARE
    assert plan.chunks == -(-numel // plan.elements)


def test_no_room_for_a_minimal_chunk_moves_the_comparison_to_the_host() -> None:
    plan = plan_chunks(10**9, ORACLE_BYTES_PER_ELEMENT, device_free=MIN_CHUNK_ELEMENTS, host_free=64 * GiB)
    assert plan.on_host and not plan.whole
    assert plan.elements == int(64 * GiB * USABLE_SHARE) // ORACLE_BYTES_PER_ELEMENT
    starved = plan_chunks(10**9, ORACLE_BYTES_PER_ELEMENT, device_free=0, host_free=0)
    assert starved.on_host and starved.elements == MIN_CHUNK_ELEMENTS


def test_host_chunks_never_exceed_the_output() -> None:
    plan = plan_chunks(5000, ORACLE_BYTES_PER_ELEMENT, device_free=0, host_free=64 * GiB, min_chunk=100)
    assert plan.on_host and plan.elements == 5000 and plan.chunks == 1 and not plan.whole


def test_exact_outputs_and_empty_outputs_are_never_chunked() -> None:
    assert plan_chunks(10**9, 0, device_free=0, host_free=0).whole
    assert plan_chunks(0, ORACLE_BYTES_PER_ELEMENT, device_free=0, host_free=0).whole

