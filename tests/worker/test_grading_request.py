"""The settings' protocol choices reach the judge's request."""

from __future__ import annotations

import pytest

from kernelgrade.config import Settings
from kernelgrade.evaluator import Interleave
from kernelgrade.worker.grading_request import RequestBuilder
from tests.evaluator.test_warm import ADD


@pytest.mark.parametrize(("switch", "profile"), [("auto", "standard"), ("off", "fast"), ("on", "standard")])
def test_the_interleaved_timing_setting_is_the_requests(switch: str, profile: str) -> None:
    settings = Settings(interleaved_timing=switch, timing_profile=profile)
    request = RequestBuilder(settings).build(ADD, "source", 0)
    assert request.timing.interleave is Interleave(switch)
    assert request.timing.min_reps == (10 if profile == "fast" else 20)
