"""The codec and the children's protocols: every message crosses a JSON line and comes back equal; what is not
a message of the protocol is refused, by the child as a protocol error and by the judge as a forged reply;
results as stored by earlier versions still read."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from kernelgrade.evaluator import EvalResult, TimingFlags, TimingParams
from kernelgrade.evaluator.codec import Codec, DecodeError
from kernelgrade.evaluator.compare import OutputMeta
from kernelgrade.evaluator.host.session import RunSession, StageFailed
from kernelgrade.evaluator.result import (
    BaselineStatus,
    CompiledBaseline,
    Environment,
    Failure,
    Finding,
    Severity,
    Stage,
    TimingMethod,
    TimingStats,
    TrialResult,
    Verdict,
)
from kernelgrade.evaluator.roofline_floor import RooflineFloor
from kernelgrade.evaluator.sandbox.launcher import ChildSpec, SubprocessLauncher
from kernelgrade.evaluator.wire.compile_protocol import BuildRecord, CompileReply, CompileRequest
from kernelgrade.evaluator.wire.hold_page import PAGE_NAME
from kernelgrade.evaluator.wire.prebuilt import Prebuilt
from kernelgrade.evaluator.wire.protocol import (
    REQUESTS,
    CallRequest,
    ExitRequest,
    ForgedReply,
    LoadRequest,
    Op,
    ReadSetsRequest,
    ReadyRequest,
    Refusal,
    RefusalKind,
    Request,
    TimedOutputsRequest,
    TimeRequest,
    WarmRequest,
    WarmupRequest,
    read_reply,
    read_request,
    reply_line,
    request_line,
)
from kernelgrade.evaluator.wire.replies import (
    CallReply,
    Done,
    Extensions,
    Integrity,
    L2Reset,
    Loaded,
    TimedOutputsReply,
    TimeReply,
    WarmupReply,
)

KEY = "0123456789abcdef0123456789abcdef"
PARAMS = TimingParams(min_reps=5, max_reps=50, flags=TimingFlags.PYTORCH_DEFAULT)
INTEGRITY = Integrity(("time.perf_counter",), ("cuda.matmul.allow_tf32",), 2, ("1 torch-dispatch mode(s)",), 4096,
                      Extensions(("kg_ext",), ("kg_ext.run",), (), ("kg_ext.init",), False, ("kg_ext.run",)))
EXCHANGES: list[tuple[Request[Any], object]] = [
    (ReadyRequest(), Done()),
    (WarmRequest("cuda:0"), Done()),
    (LoadRequest(Path("/w/submission.py"), Path("/w/init.kgt"), 42, "cpu",
                 (Prebuilt("d" * 64, "kg_ext/kg_ext.so", True), Prebuilt("e" * 64, "ops/ops.so", False)),
                 Path("/w/prebuilt"), 5), Loaded(INTEGRITY, shared_region=True)),
    (CallRequest(Path("/w/in.kgt"), Path("/w/out.kgt"), (4096, 0), 0.25, 1 << 20, 12288),
     CallReply((OutputMeta("Tensor", True, "cpu", "float32", (16, 16)),
                OutputMeta("list", False, "", "", (), why_not_plain="not a tensor")),
               (1,), True, INTEGRITY, (7, -3))),
    (WarmupRequest((Path("/w/t0.kgt"), Path("/w/t1.kgt")), PARAMS, 1 << 24, 0.002), WarmupReply(9, INTEGRITY)),
    (TimeRequest(PARAMS), TimeReply((1.0, 1.5, math.inf), (1.1, 1.6, 2.0), "target_precision", "cuda_event",
                                    INTEGRITY, L2Reset("reset", 1 << 20, 0), 1, 2, (0.08, 0.09, 0.1))),
    (TimedOutputsRequest(Path("/w/timed")), TimedOutputsReply(3, (4, 17), INTEGRITY)),
    (ReadSetsRequest((Path("/w/t0.kgt"), Path("/w/t1.kgt"))), Done()),
]


def line(message: object) -> bytes:
    """What crosses the pipe."""
    return json.dumps(message).encode()


def test_every_op_has_one_request_type() -> None:
    assert set(REQUESTS) == set(Op)
    assert {type(request).OP for request, _ in EXCHANGES} | {Op.EXIT} == set(Op)


@pytest.mark.parametrize(("request_", "reply"), EXCHANGES, ids=[r.OP.value for r, _ in EXCHANGES])
def test_every_request_and_reply_crosses_the_wire_unchanged(request_: Request[Any], reply: object) -> None:
    received = read_request(line(request_line(request_, 7, KEY)))
    assert received.request == request_ and received.seq == 7
    raw = json.loads(line(reply_line(KEY, received.seq, reply, 0.5)))
    assert read_reply(raw, request_, 7, KEY) == reply


def test_nan_crosses_the_wire_as_nan() -> None:
    reply = replace(EXCHANGES[5][1], device_ms=(math.nan, 1.0))  # type: ignore[type-var]
    back = read_reply(json.loads(line(reply_line(KEY, 1, reply))), TimeRequest(PARAMS), 1, KEY)
    assert isinstance(back, TimeReply) and math.isnan(back.device_ms[0]) and back.device_ms[1] == 1.0


def test_the_key_travels_only_until_the_submission_is_loaded() -> None:
    keyed = {type(r).OP for r, _ in EXCHANGES if request_line(r, 1, KEY)["channel_key"] == KEY}
    assert keyed == {Op.READY, Op.WARM, Op.LOAD}
    assert read_request(line(request_line(EXCHANGES[3][0], 1, KEY))).channel_key == ""


def test_a_refusal_comes_back_as_one() -> None:
    refusal = Refusal(RefusalKind.SUBMISSION, "Traceback ...\nRuntimeError: boom")
    raw = json.loads(line(reply_line(KEY, 3, refusal)))
    assert read_reply(raw, CallRequest(Path("i"), Path("o")), 3, KEY) == refusal


def test_exit_is_read_as_exit() -> None:
    assert isinstance(read_request(line(request_line(ExitRequest(), 9, KEY))).request, ExitRequest)


@pytest.mark.parametrize(("raw", "problem"), [
    ({"op": "dance", "seq": 4, "body": {}}, "unknown op 'dance'"),
    ({"op": "warm", "seq": 4, "body": {}}, "body.device: missing"),
    ({"op": "call", "seq": 4, "body": {"inputs": "i", "outputs": "o", "poison_bytes": ["1"]}},
     "body.poison_bytes[0]: expected an integer"),
    ({"op": "time", "seq": 4, "body": {"params": {"flags": "fast"}}}, "body.params.flags: expected one of"),
    ({"op": "warm", "seq": 4, "body": {"device": "cpu", "priority": 1}}, "body.priority: not a field"),
])
def test_the_child_refuses_what_is_not_a_request_of_the_protocol(raw: dict[str, Any], problem: str) -> None:
    received = read_request(line(raw))
    assert received.seq == 4, "the refusal answers the request's sequence number"
    assert isinstance(received.request, Refusal) and received.request.kind is RefusalKind.PROTOCOL
    assert problem in received.request.message


@pytest.mark.parametrize("text", [b"not json", b"[1, 2]", b'{"op": "ready"}', b'{"op": "ready", "seq": true}'])
def test_a_line_with_no_envelope_is_refused_without_a_sequence_number(text: bytes) -> None:
    received = read_request(text)
    assert received.seq is None and isinstance(received.request, Refusal)


def call_reply(**changes: object) -> dict[str, Any]:
    raw: dict[str, Any] = json.loads(line(reply_line(KEY, 5, EXCHANGES[3][1])))
    raw.update(changes)
    return raw


# What the submission of tests/cases/attack_18_forged_reply writes into every pipe it finds.
FORGED = {"ok": True, "outputs": [{"type_name": "Tensor", "is_plain_tensor": True, "device": "cpu",
                                   "dtype": "float32", "shape": [1024, 1024]}], "seq": 5}


@pytest.mark.parametrize(("raw", "problem"), [
    (FORGED, "without this run's key"),
    (call_reply(channel_key="f" * 32), "without this run's key"),
    (call_reply(seq=4), "without this run's key or sequence number"),
    (call_reply(seq=True, channel_key=KEY), "not the harness's"),  # True == 1 in Python, never an int here
    (call_reply(body={"outputs": []}), "body.mutated_inputs: missing"),
    (call_reply(body={**call_reply()["body"], "changed_after_return": 0}), "body.changed_after_return: expected true"),
    (call_reply(body={**call_reply()["body"], "verdict": "correct"}), "body.verdict: not a field"),
    (call_reply(body=None), "either a body or a refusal"),
    (call_reply(refusal={"kind": "submission", "message": "x"}), "either a body or a refusal"),
    (call_reply(ok=True), "ok: not a field"),
])
def test_the_judge_refuses_a_reply_that_is_not_the_harnesss_answer(raw: dict[str, Any], problem: str) -> None:
    request = CallRequest(Path("i"), Path("o"))
    seq = 1 if raw.get("seq") is True else 5
    with pytest.raises(ForgedReply) as refused:
        read_reply(raw, request, seq, KEY)
    assert problem in str(refused.value)


def test_the_codec_names_the_path_of_a_bad_field() -> None:
    raw = json.loads(line(Codec().encode(EXCHANGES[3][1])))
    raw["outputs"][1]["shape"] = [2, "3"]
    with pytest.raises(DecodeError) as bad:
        Codec().decode(CallReply, raw)
    assert bad.value.path == "outputs[1].shape[1]" and "expected an integer" in str(bad.value)
    del raw["integrity"]["extra_threads"]
    raw["outputs"][1]["shape"] = [2, 3]
    with pytest.raises(DecodeError, match=r"integrity\.extra_threads: missing"):
        Codec().decode(CallReply, raw)


def test_fixed_length_tuples_and_unions_are_strict() -> None:
    stages = Codec().decode(EvalResult, {"verdict": "correct", "problem": "p", "problem_hash": "h", "precision": "",
                                         "stage_seconds": [["load", 1]]}).stage_seconds
    assert stages == (("load", 1.0),) and isinstance(stages[0][1], float)
    with pytest.raises(DecodeError, match=r"stage_seconds\[0\]: expected 2 items"):
        Codec().decode(EvalResult, {"verdict": "correct", "problem": "p", "problem_hash": "h", "precision": "",
                                    "stage_seconds": [["load", 1, 2]]})
    with pytest.raises(DecodeError, match=r"failure\.stage: expected one of"):
        Codec().decode(EvalResult, {"verdict": "error", "problem": "p", "problem_hash": "h", "precision": "",
                                    "failure": {"stage": "nowhere", "code": "c", "message": "m"}})


def test_the_compile_exchange_crosses_unchanged_and_refuses_a_library_outside_the_build() -> None:
    request = CompileRequest(Path("/w/s.py"), Path("/w/i.kgt"), 3, {"cpu-O3": "/pch/cpu-O3"}, lean=True)
    assert Codec().decode(CompileRequest, json.loads(line(Codec().encode(request)))) == request
    reply = CompileReply((BuildRecord("kg_ext", True, prebuilt=Prebuilt("d" * 64, "kg_ext/kg_ext.so")),
                          BuildRecord("other", False, "RuntimeError: nvcc failed")), "", ("cuda-O2",))
    raw = json.loads(line(Codec().encode(reply)))
    assert Codec().decode(CompileReply, raw) == reply and [b.name for b in reply.failed] == ["other"]
    raw["builds"][0]["prebuilt"]["library"] = "../other-job/ext.so"
    with pytest.raises(DecodeError, match=r"builds\[0\]\.prebuilt: a prebuilt library must lie inside"):
        Codec().decode(CompileReply, raw)


TIMING = TimingStats(40, 1.5, 1.6, 0.1, 1.2, 2.5, 1.4, 1.7, "target_precision", (1.2, 1.5, 2.5), 1.9, 1)
METHOD = TimingMethod("cuda_event", 1 << 28, 3, 25.0, 20, 1000, 0.01, 2000.0, 30000.0, 3, l2_persisting="reset")
FULL = EvalResult(
    Verdict.FLAGGED, "add_relu", "abc", "fp32", Failure(Stage.TIMING, "timer_patched", "the clock", "detail", 12),
    (TrialResult(0, False, True, "", 1e-7, 2e-7, 3e-8, 4e-8, 5e-8), TrialResult(1, True, False, "differs")),
    TIMING, replace(TIMING, median_ms=0.5), 3.0, METHOD, (Finding("timer_patched", Severity.FLAG, "the clock"),),
    Environment("cuda", "H100", "550", "2.5", "12.4", "3.11", "host", "9.0", "bwrap"),
    (("compile", 1.25), ("timing", 2.5), ("timing:candidate", 1.0)), 4.5, True, "log", "output", (("note", "x"),),
    RooflineFloor(0.1, 0.05, 0.1, "H100", 2.0, "fp32"), "deployment",
    CompiledBaseline(BaselineStatus.MEASURED, "abc", "inductor (mode default)", "H100", "2.5", "2025-01-01T00:00:00",
                     TIMING, METHOD, 12.5), True, 1.5)


def test_a_full_result_survives_storage() -> None:
    stored = json.loads(json.dumps(FULL.to_json_dict()))
    assert EvalResult.from_json_dict(stored) == FULL
    assert stored["verdict"] == "flagged" and stored["stage_seconds"][0] == ["compile", 1.25]
    assert CompiledBaseline.from_json_dict(stored["compiled_baseline"]) == FULL.compiled_baseline


def test_a_result_stored_with_the_mean_precision_target_still_reads() -> None:
    """Results stored before the stopping rule dropped the mean's standard error record a `target_rse`."""
    stored = json.loads(json.dumps(FULL.to_json_dict()))
    stored["method"]["target_rse"] = 0.005
    assert EvalResult.from_json_dict(stored) == FULL


def test_nan_is_stored_as_null_and_read_back_as_nan() -> None:
    result = replace(FULL, candidate_timing=replace(TIMING, std_ms=math.nan, samples_ms=(1.0, math.nan)),
                     speedup=math.nan)
    stored = json.loads(json.dumps(result.to_json_dict(), allow_nan=False))
    assert stored["candidate_timing"]["std_ms"] is None and stored["candidate_timing"]["samples_ms"] == [1.0, None]
    back = EvalResult.from_json_dict(stored)
    assert back.candidate_timing is not None and math.isnan(back.candidate_timing.std_ms)
    assert math.isnan(back.candidate_timing.samples_ms[1]) and back.speedup is None  # an optional float: None


# A result as an earlier version stored it: no wall_s, roofline, seed_secret or compiled baseline yet, NaN as
# null, and a field since removed.
EARLIER = """{"verdict": "correct", "problem": "add_relu", "problem_hash": "abc123", "precision": "fp32",
"failure": null, "trials": [{"index": 0, "secret": false, "passed": true, "message": "", "max_abs_error": 1e-07,
"max_rel_error": 2e-07, "rel_error_vs_reference": 3e-08, "rel_error_vs_oracle": null,
"reference_error_vs_oracle": null}], "reference_timing": {"n": 3, "median_ms": 1.5, "mean_ms": 1.5, "std_ms": null,
"min_ms": 1.4, "max_ms": 1.6, "ci95_low_ms": 1.45, "ci95_high_ms": 1.55, "stop_reason": "max_reps",
"samples_ms": [1.4, 1.5, 1.6]}, "candidate_timing": null, "speedup": null, "method": null,
"findings": [{"code": "speedup_review", "severity": "review", "message": "look"}], "environment": null,
"stage_seconds": [["compile", 1.25], ["load", 0.5]], "compile_cache_hit": false, "compile_log": "",
"child_output": "", "extra": [], "seconds_total": 1.75}"""


def test_a_result_stored_by_an_earlier_version_still_reads() -> None:
    result = EvalResult.from_json_dict(json.loads(EARLIER))
    assert result.verdict is Verdict.CORRECT and result.wall_s == 0.0 and result.compiled_baseline is None
    assert result.reference_timing is not None and math.isnan(result.reference_timing.std_ms)
    assert result.reference_timing.host_bound_reps == 0 and result.findings[0].severity is Severity.REVIEW
    assert result.seconds == 1.75


def test_a_stored_result_with_a_wrong_field_is_refused_by_name() -> None:
    stored = json.loads(json.dumps(FULL.to_json_dict()))
    stored["trials"][1]["passed"] = "no"
    with pytest.raises(ValueError, match=r"trials\[1\]\.passed: expected true or false"):
        EvalResult.from_json_dict(stored)
    del stored["problem_hash"]
    with pytest.raises(ValueError, match="problem_hash: missing"):
        EvalResult.from_json_dict(stored)


class ScriptLauncher:
    """Starts `script` in place of the child the session asks for: a real process on the other end of the pipe
    that answers as the run child does, or not."""

    level = "none"

    def __init__(self, script: str) -> None:
        self.script = script

    def popen(self, spec: ChildSpec) -> subprocess.Popen[bytes]:
        return SubprocessLauncher().popen(replace(spec, argv=(sys.executable, "-c", self.script)))


# Answers `ready` with this run's key and sequence number, as the harness does, but with a body that is not
# the reply to `ready` (a body where `warm`'s empty one belongs).
MISSHAPEN = """import json, sys
request = json.loads(sys.stdin.readline())
reply = {"channel_key": request["channel_key"], "seq": request["seq"], "body": {"calls": 3}}
sys.stdout.write(json.dumps(reply) + "\\n"); sys.stdout.flush(); sys.stdin.readline()
"""


def test_a_keyed_reply_that_does_not_decode_is_reported_as_forged(tmp_path: Path) -> None:
    (tmp_path / "work").mkdir()
    session = RunSession(ScriptLauncher(MISSHAPEN), tmp_path / "work", None, {})  # type: ignore[arg-type]
    try:
        with pytest.raises(StageFailed) as failed:
            session.started(timeout=60)
    finally:
        session.close()
    assert failed.value.failure.code == "reply_forged" and not failed.value.timed_out
    assert "body.calls: not a field of Done" in failed.value.failure.message


def test_a_later_gpu_session_in_the_same_work_dir_gets_a_page_of_its_own(tmp_path: Path) -> None:
    """The compiled baseline's run child follows the candidate's in one work dir: each makes its hold page
    afresh (exclusively), so the first one's must be gone with it."""
    work = tmp_path / "work"
    work.mkdir()
    for _ in range(2):
        session = RunSession(ScriptLauncher("pass"), work, 0, {})  # type: ignore[arg-type]
        assert session.hold_page is not None and (work / PAGE_NAME).is_file()
        session.close()
        assert not (work / PAGE_NAME).exists()


def test_the_run_child_answers_an_unknown_op_with_a_protocol_error(tmp_path: Path) -> None:
    """The real run child: after `ready`, a request it has no handler for comes back as a protocol refusal
    carrying the key and the request's sequence number, and the child keeps serving."""
    (tmp_path / "work").mkdir()
    session = RunSession(SubprocessLauncher(), tmp_path / "work", None, {})
    try:
        session.started(timeout=120)  # importing torch on a loaded 2-core host takes seconds
        raw = session.child.request({"op": "dance", "seq": 2, "body": {}}, timeout=60)
        assert read_reply(raw, ReadyRequest(), 2, session._key) == Refusal(RefusalKind.PROTOCOL, "unknown op 'dance'")
        raw = session.child.request(request_line(ReadyRequest(), 3, ""), timeout=60)
        assert read_reply(raw, ReadyRequest(), 3, session._key) == Done()
    finally:
        session.close()
