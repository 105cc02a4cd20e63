"""The run child's protocol: one request type and one reply type per operation, in JSON lines.

A request line is {"op", "seq", "channel_key" (ready, warm and load only), "body"}; the reply line is
{"channel_key", "seq", "seconds", "body", "refusal"}, with the reply in "body" when the request was carried out
and why not in "refusal" when it was not (the other one null). The envelope is written and checked here and
nowhere else, on both sides:

- the judge (host/session.py) writes requests with request_line() and reads replies with read_reply(), which
  refuses, as ForgedReply, a reply without this run's key and the request's sequence number (docs/threats.md
  18) and one that does not decode as the request's reply type: only the harness writes to the channel, with
  the key it was given before the submission was imported;
- the child (child/run_child.py) reads requests with read_request(), which turns an unknown op or a malformed
  request into a protocol Refusal for the child to send back, and writes replies with reply_line().

Everything is read with the strict Codec(): both ends are this package, started from the judge's own copy of
it, so a field one side does not know is never a version difference; it is refused, like a missing or
mistyped one. NaN crosses as JSON's NaN literal (both ends are Python's json). The codec is made where it is
used, not kept in a module constant: the child's guard (integrity/guard.py) watches the harness's callables,
so a submission that rebinds them to rewrite the replies is reported, and a constant it replaced would not be.
"""

from __future__ import annotations

import json
import typing
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from types import MappingProxyType
from typing import Any, ClassVar, Generic, TypeVar

from kernelgrade.evaluator.codec import Codec, DecodeError, JSONValue
from kernelgrade.evaluator.request import TimingParams
from kernelgrade.evaluator.wire.prebuilt import Prebuilt
from kernelgrade.evaluator.wire.replies import (
    CallReply,
    Done,
    Loaded,
    TimedOutputsReply,
    TimeReply,
    WarmupReply,
)

ReplyT = TypeVar("ReplyT")


class Op(StrEnum):
    READY = "ready"
    WARM = "warm"
    LOAD = "load"
    CALL = "call"
    READ_SETS = "read_sets"
    WARMUP = "warmup"
    TIME = "time"
    TIMED_OUTPUTS = "timed_outputs"
    EXIT = "exit"


# The requests that carry the channel key: the child keeps the first key it is offered, and all of these come
# before the submission is imported (load imports it only after reading its request). A submission that reads
# the command pipe learns sequence numbers, never the key.
KEYED = frozenset({Op.READY, Op.WARM, Op.LOAD})


class Request(Generic[ReplyT]):
    """A request to the run child; its type parameter is the type of the child's reply."""

    OP: ClassVar[Op]

    @classmethod
    def reply_type(cls) -> type[ReplyT]:
        base = next(b for b in getattr(cls, "__orig_bases__", ()) if typing.get_origin(b) is Request)
        return typing.cast("type[ReplyT]", typing.get_args(base)[0])


@dataclass(frozen=True)
class ReadyRequest(Request[Done]):
    """Answered once torch is imported, before the child touches the device."""

    OP = Op.READY


@dataclass(frozen=True)
class WarmRequest(Request[Done]):
    """Create the device's context and library handles, before any submission."""

    OP = Op.WARM
    device: str


@dataclass(frozen=True)
class LoadRequest(Request[Loaded]):
    OP = Op.LOAD
    submission: Path
    init_inputs: Path
    seed: int
    device: str
    prebuilt: tuple[Prebuilt, ...]
    prebuilt_dir: Path
    region_fd: int = -1  # the descriptor of the shared region for outputs (wire/shared_region.py); -1: none


@dataclass(frozen=True)
class CallRequest(Request[CallReply]):
    OP = Op.CALL
    inputs: Path
    outputs: Path
    poison_bytes: tuple[int, ...] = ()  # sizes of freed blocks to fill with 0xFF before the call
    settle_s: float = 0.0  # the wait before the outputs are fingerprinted again (the child clamps it)
    # The outputs go into the shared region's first region_bytes, after the inputs (from the first multiple of
    # shared_region.ALIGN past inputs_bytes), where they fit there; else to `outputs`.
    region_bytes: int = 0
    # The inputs are in the shared region's first inputs_bytes, in the tensor file format; 0: in `inputs`.
    inputs_bytes: int = 0


@dataclass(frozen=True)
class ReadSetsRequest(Request[Done]):
    """Read the timing input sets ahead of the warm-up on the same files, which keeps them where they are
    unchanged: the reference's child reads them while the candidate's trials run (judge/reference_ahead.py)."""

    OP = Op.READ_SETS
    input_sets: tuple[Path, ...]


@dataclass(frozen=True)
class WarmupRequest(Request[WarmupReply]):
    OP = Op.WARMUP
    input_sets: tuple[Path, ...]
    params: TimingParams
    flush_bytes: int
    settle_s: float = 0.0


@dataclass(frozen=True)
class TimeRequest(Request[TimeReply]):
    """Time the candidate on the input sets and flush buffer of the preceding warmup."""

    OP = Op.TIME
    params: TimingParams
    keep_outputs: bool = True  # whether the timed outputs are kept for a re-check (timing.OutputKeeper)
    # A further round of one interleaved phase: the outputs kept are sampled from this and the rounds before.
    resumes: bool = False


@dataclass(frozen=True)
class TimedOutputsRequest(Request[TimedOutputsReply]):
    """Write the kept timed outputs from `first` on: one after another into the shared region's first
    region_bytes while they fit there, else one to its file. The judge asks again for the rest once it has read
    these; the first request (0) also settles and checks them."""

    OP = Op.TIMED_OUTPUTS
    outputs_dir: Path
    first: int = 0
    region_bytes: int = 0


@dataclass(frozen=True)
class ExitRequest(Request[None]):
    """Ends the child's command loop; it has no reply."""

    OP = Op.EXIT


REQUESTS: Mapping[Op, type[Request[Any]]] = MappingProxyType({kind.OP: kind for kind in (
    ReadyRequest, WarmRequest, LoadRequest, CallRequest, ReadSetsRequest, WarmupRequest, TimeRequest,
    TimedOutputsRequest, ExitRequest)})


class RefusalKind(StrEnum):
    SUBMISSION = "submission"  # the submission raised; the message is its traceback
    PROTOCOL = "protocol"  # the request was not one of this protocol's


@dataclass(frozen=True)
class Refusal:
    """Why the child did not carry out a request."""

    kind: RefusalKind
    message: str


class ForgedReply(Exception):
    """A line on the channel that is not the harness's reply to the request just sent."""


@dataclass(frozen=True)
class _RequestLine:
    op: str  # not an Op: an unknown op is refused with its own message
    seq: int
    body: object
    channel_key: str = ""


@dataclass(frozen=True)
class _ReplyLine:
    channel_key: str
    seq: int | None  # None: the request's own could not be read
    seconds: float = 0.0  # the child's time for the request, for its log
    body: object = None  # the reply, when the request was carried out
    refusal: Refusal | None = None  # why it was not

    def __post_init__(self) -> None:
        if (self.refusal is None) == (self.body is None):
            raise ValueError("a reply carries either a body or a refusal")


@dataclass(frozen=True)
class Received:
    """A request as the child read it: the envelope, and the request or why it cannot be carried out."""

    seq: int | None
    channel_key: str
    request: Request[Any] | Refusal


def request_line(request: Request[Any], seq: int, channel_key: str) -> dict[str, JSONValue]:
    key = channel_key if request.OP in KEYED else ""
    codec = Codec()
    return codec.encode_dataclass(_RequestLine(request.OP.value, seq, codec.encode_dataclass(request), key))


def read_reply(raw: Mapping[str, object], request: Request[ReplyT], seq: int, channel_key: str) -> ReplyT | Refusal:
    """The child's reply to `request`, sent as `seq`, or its refusal. Raises ForgedReply for anything else."""
    if raw.get("channel_key") != channel_key or raw.get("seq") != seq:
        raise ForgedReply(f"a reply without this run's key or sequence number: {str(dict(raw))[:200]}")
    try:
        line = Codec().decode(_ReplyLine, raw)
        return line.refusal or Codec().decode(request.reply_type(), line.body, "body")
    except DecodeError as exc:
        raise ForgedReply(f"a reply that is not the harness's ({exc})") from None


def read_request(line: bytes) -> Received:
    """A request line as the child reads it; never raises for what the line holds."""
    try:
        head = Codec().decode(_RequestLine, json.loads(line))
    except (ValueError, RecursionError) as exc:  # DecodeError is a ValueError, as are JSON syntax errors
        return Received(None, "", Refusal(RefusalKind.PROTOCOL, f"not a request of this protocol: {exc}"))
    kind = next((k for op, k in REQUESTS.items() if op.value == head.op), None)
    if kind is None:
        return Received(head.seq, head.channel_key, Refusal(RefusalKind.PROTOCOL, f"unknown op {head.op!r}"))
    try:
        request: Request[Any] | Refusal = Codec().decode(kind, head.body, "body")
    except DecodeError as exc:
        request = Refusal(RefusalKind.PROTOCOL, f"a malformed {head.op} request: {exc}")
    return Received(head.seq, head.channel_key, request)


def reply_line(channel_key: str, seq: int | None, answer: object, seconds: float = 0.0) -> dict[str, JSONValue]:
    """The child's reply: `answer` is the request's reply or a Refusal."""
    if isinstance(answer, Refusal):
        return Codec().encode_dataclass(_ReplyLine(channel_key, seq, refusal=answer))
    codec = Codec()
    return codec.encode_dataclass(_ReplyLine(channel_key, seq, seconds, codec.encode_dataclass(answer)))
