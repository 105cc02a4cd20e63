"""What the run child answers, as typed values: the session parses the child's JSON into these, the
judge's stages and the integrity cross-checks read them. The child's word, never the judge's own
observation: the cross-checks exist because any field here may be forged.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kernelgrade.evaluator.compare import OutputMeta


@dataclass(frozen=True)
class Extensions:
    """The submission's compiled extension modules, and which of their functions ran or raised (while
    loading and in checked calls)."""

    modules: tuple[str, ...] = ()  # extension modules exporting at least one function
    called: tuple[str, ...] = ()  # "module.function" called in checked forward() calls
    raised: tuple[str, ...] = ()  # ... and raised there
    called_at_load: tuple[str, ...] = ()  # called while importing or constructing ModelNew
    tampered: bool = False  # the profile hook that records this was replaced
    returned: tuple[str, ...] = ()  # called in checked forward() calls and returned normally

    @classmethod
    def from_reply(cls, raw: Any) -> Extensions:
        raw = raw if isinstance(raw, dict) else {}

        def names(key: str) -> tuple[str, ...]:
            return tuple(map(str, raw.get(key, [])))

        return cls(names("modules"), names("called"), names("raised"), names("called_at_load"),
                   bool(raw.get("tampered", False)), names("returned"))


@dataclass(frozen=True)
class Integrity:
    """What the child says about itself after a call; the judge turns these into findings."""

    replaced_functions: tuple[str, ...]
    precision_flags_changed: tuple[str, ...]
    extra_threads: int
    torch_modes: tuple[str, ...] = ()
    l2_limit_bytes: int = 0  # a persisting-L2 set-aside the submission configured (0: none)
    extensions: Extensions = field(default_factory=Extensions)

    @classmethod
    def from_reply(cls, reply: dict[str, Any]) -> Integrity:
        return cls(tuple(map(str, reply.get("replaced_functions", []))),
                   tuple(map(str, reply.get("precision_flags_changed", []))), int(reply.get("extra_threads", 0)),
                   tuple(map(str, reply.get("torch_modes", []))), int(reply.get("l2_limit_bytes", 0)),
                   Extensions.from_reply(reply.get("extensions")))


@dataclass(frozen=True)
class CallReply:
    outputs: tuple[OutputMeta, ...]
    mutated_inputs: tuple[int, ...]
    changed_after_return: bool
    integrity: Integrity
    input_fingerprints: tuple[int, ...] = ()


@dataclass(frozen=True)
class TimedOutputsReply:
    kept: int
    changed_after_return: tuple[int, ...]  # reps whose output changed after the rep ended
    integrity: Integrity


@dataclass(frozen=True)
class TimedReply:
    device_ms: tuple[float, ...]
    wall_ms: tuple[float, ...]
    stop_reason: str
    clock: str
    integrity: Integrity
    outer_seconds: float  # the judge's own clock around the whole timed phase
    l2_status: str = ""  # what resetting persisting L2 before timing gave
    l2_limit_before: int = 0  # a set-aside the submission had configured, found by that reset (0: none)
    clock_tampered_reps: int = 0  # reps after which the harness's clock had been rebound
    host_bound_reps: int = 0  # reps whose device time may include host time (timing.py)
    flush_ms: tuple[float, ...] = ()  # each rep's flush, as the device ran it (timing.RawSamples)
    hold: str = ""  # whether the child's reps held the stream until enqueued (timing.Holding.status)
