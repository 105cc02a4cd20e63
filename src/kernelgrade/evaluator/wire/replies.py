"""What the run child answers, as typed values: the child builds these, protocol.py carries them, the judge's
stages and the integrity cross-checks read them. The child's word, never the judge's own observation: the
cross-checks exist because any field here may be forged. TimedReply alone pairs the child's word with what the
judge measured itself.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kernelgrade.evaluator.compare import OutputMeta


@dataclass(frozen=True)
class Done:
    """The reply to a request that reports nothing but its completion (ready, warm)."""


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


@dataclass(frozen=True)
class Integrity:
    """What the child says about itself after a call; the judge turns these into findings."""

    replaced_functions: tuple[str, ...]
    precision_flags_changed: tuple[str, ...]
    extra_threads: int
    torch_modes: tuple[str, ...] = ()
    l2_limit_bytes: int = 0  # a persisting-L2 set-aside the submission configured (0: none)
    extensions: Extensions = field(default_factory=Extensions)
    # The child's peak device memory so far (torch's allocator; 0 on the CPU). A claim, recorded for the
    # operator and never used for a verdict.
    peak_device_bytes: int = 0


@dataclass(frozen=True)
class Loaded:
    """The reply to `load`: what the child says about itself once ModelNew is built, and whether it mapped the
    judge's shared region (wire/shared_region.py). Where it did, checked calls' inputs cross there too."""

    integrity: Integrity
    shared_region: bool = False


@dataclass(frozen=True)
class CallReply:
    outputs: tuple[OutputMeta, ...]
    mutated_inputs: tuple[int, ...]
    changed_after_return: bool
    integrity: Integrity
    input_fingerprints: tuple[int, ...] = ()
    region_bytes: int = 0  # the bytes of outputs written into the shared region; 0: they are in the file


@dataclass(frozen=True)
class WarmupReply:
    calls: int  # warm-up calls made
    integrity: Integrity


@dataclass(frozen=True)
class L2Reset:
    """What resetting persisting L2 before timing gave."""

    status: str = ""  # "reset", "unsupported: ...", "failed: ...", "not applicable (CPU)"
    limit_bytes: int = 0  # a set-aside the submission had configured, found by the reset (0: none)
    window_bytes: int = 0  # the stream's access policy window found by the reset


@dataclass(frozen=True)
class TimeReply:
    """The child's account of a timed phase."""

    device_ms: tuple[float, ...]
    wall_ms: tuple[float, ...]
    stop_reason: str
    clock: str
    integrity: Integrity
    l2: L2Reset = field(default_factory=L2Reset)
    clock_tampered_reps: int = 0  # reps after which the harness's clock had been rebound
    host_bound_reps: int = 0  # reps whose device time may include host time (timing.py)
    flush_ms: tuple[float, ...] = ()  # each rep's flush, as the device ran it (timing.RawSamples)
    hold: str = ""  # whether the reps held the stream until enqueued (timing.Holding.status)
    tail_ms: tuple[float, ...] = ()  # each rep's device time after its end event (timing.RawSamples)
    waited_ms: tuple[float, ...] = ()  # each rep's wait for a CPU in its host-inclusive time (timing.RawSamples)


@dataclass(frozen=True)
class TimedOutputsReply:
    kept: int
    changed_after_return: tuple[int, ...]  # reps whose output changed after the rep ended
    integrity: Integrity
    # The kept outputs this request wrote, in order from its `first`: each one's end in the shared region (it
    # starts where the one before ended, aligned: shared_region.aligned), or 0 for one in its file.
    ends: tuple[int, ...] = ()


@dataclass(frozen=True)
class TimedReply:
    """A timed phase as the judge holds it: the child's report, and the judge's own clock around the whole
    phase (request to reply), which the child cannot touch."""

    reported: TimeReply
    outer_seconds: float
    # The judge's own reading of how long the child's threads waited for a CPU during the phase (proctree.py);
    # None where it could not be read.
    waited_seen_ms: float | None = None
    # Requests the phase took: an interleaved phase is several rounds, each with a request's fixed costs.
    requests: int = 1
