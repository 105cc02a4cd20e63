"""The run child: loads the built submission, runs forward() on the judge's inputs, times it.

Untrusted code runs in this process, so everything it reports is a claim the judge cross-checks.
Run as `python -m kernelgrade.evaluator.run_child`; commands arrive as JSON lines (see session.py).
"""

from __future__ import annotations

import sys
import threading
import time
import traceback
from pathlib import Path
from typing import Any

import torch

from kernelgrade.evaluator import precision_flags, tensorfile, timing
from kernelgrade.evaluator.channel import ChildChannel
from kernelgrade.evaluator.compare import flatten_outputs
from kernelgrade.evaluator.request import TimingParams
from kernelgrade.evaluator.submission_module import import_submission

# Captured before the submission is imported (see timing.py for the same precaution).
_Tensor = torch.Tensor
_equal = torch.equal
_perf_counter = time.perf_counter
_watched = {
    "time.perf_counter_ns": (time, "perf_counter_ns", time.perf_counter_ns),
    "time.perf_counter": (time, "perf_counter", time.perf_counter),
    "torch.cuda.synchronize": (torch.cuda, "synchronize", torch.cuda.synchronize),
    "torch.cuda.Event": (torch.cuda, "Event", torch.cuda.Event),
    "torch.cuda.Event.elapsed_time": (torch.cuda.Event, "elapsed_time", torch.cuda.Event.elapsed_time),
    "torch.cuda.Event.record": (torch.cuda.Event, "record", torch.cuda.Event.record),
    "torch.Tensor.clone": (torch.Tensor, "clone", torch.Tensor.clone),
    "torch.Tensor.fill_": (torch.Tensor, "fill_", torch.Tensor.fill_),
}


class SubmissionFailed(Exception):
    """The submission raised; carries the formatted traceback."""


def output_meta(value: Any) -> dict[str, Any]:
    plain = type(value) is _Tensor
    return {
        "type_name": type(value).__name__,
        "is_plain_tensor": plain,
        "device": str(value.device) if plain else "",
        "dtype": tensorfile.dtype_name(value.dtype) if plain else "",
        "shape": list(value.shape) if plain else [],
    }


def checksum(values: list[Any]) -> list[float]:
    return [float(v.detach().double().sum()) if type(v) is _Tensor and v.numel() else 0.0 for v in values]


class Harness:
    def __init__(self) -> None:
        self.model: Any = None
        self.device = torch.device("cpu")
        self.flags_before: dict[str, str] = {}
        self.threads_before = 0
        self.timing_sets: list[list[Any]] = []

    def handle(self, command: dict[str, Any]) -> dict[str, Any]:
        op = command.get("op")
        handler = {"load": self.load, "call": self.call, "warmup": self.warmup, "time": self.time}.get(str(op))
        if handler is None:
            return {"ok": False, "kind": "protocol", "error": f"unknown op {op!r}"}
        started = _perf_counter()
        try:
            reply = handler(command)
        except SubmissionFailed as exc:
            return {"ok": False, "kind": "submission", "error": str(exc)}
        reply.setdefault("ok", True)
        reply["seconds"] = _perf_counter() - started
        return reply

    def _run_submission(self, fn: Any, *args: Any) -> Any:
        try:
            return fn(*args)
        except BaseException as exc:  # SystemExit and KeyboardInterrupt from submission code included
            raise SubmissionFailed(_format_exception(exc)) from None

    def load(self, command: dict[str, Any]) -> dict[str, Any]:
        self.device = torch.device(command["device"])
        precision_flags.set_strict()
        torch.set_grad_enabled(False)
        self.flags_before = precision_flags.snapshot()
        module = self._run_submission(import_submission, Path(command["submission"]))
        if not hasattr(module, "ModelNew"):
            raise SubmissionFailed("the module defines no ModelNew after import")
        init_inputs = tensorfile.load(Path(command["init_inputs"]))
        torch.manual_seed(int(command["seed"]))
        model = self._run_submission(module.ModelNew, *init_inputs)
        self.model = self._run_submission(model.to, self.device)
        timing.device_synchronize(self.device)
        self.threads_before = threading.active_count()
        return {}

    def _inputs(self, path: str) -> list[Any]:
        values = tensorfile.load(Path(path))
        return [v.to(self.device) if isinstance(v, _Tensor) else v for v in values]

    def call(self, command: dict[str, Any]) -> dict[str, Any]:
        inputs = self._inputs(command["inputs"])
        given = timing.clone_inputs(inputs)
        _poison(self.device, [int(n) for n in command.get("poison_bytes", [])])
        timing.device_synchronize(self.device)
        out = self._run_submission(self.model, *given)
        outputs = flatten_outputs(out)
        at_return = checksum(outputs)
        self._synchronize()
        after_sync = checksum(outputs)
        mutated = [i for i, (a, b) in enumerate(zip(inputs, given, strict=True))
                   if isinstance(a, _Tensor) and not (type(b) is _Tensor and _equal(a, b))]
        metas = [output_meta(v) for v in outputs]
        tensorfile.save(Path(command["outputs"]), [v if type(v) is _Tensor else None for v in outputs])
        return {"outputs": metas, "mutated_inputs": mutated,
                "changed_after_return": at_return != after_sync, **self._integrity()}

    def _synchronize(self) -> None:
        try:
            timing.device_synchronize(self.device)
        except BaseException as exc:  # an asynchronous CUDA error surfaces here
            raise SubmissionFailed(_format_exception(exc)) from None

    def warmup(self, command: dict[str, Any]) -> dict[str, Any]:
        # The sets stay loaded for `time`, so the judge's clock around that phase covers only the reps.
        self.timing_sets = [self._inputs(p) for p in command["input_sets"]]
        params = TimingParams(**command["params"])
        calls = self._run_submission(timing.warm_up, self.model, self.timing_sets, self.device, params)
        return {"calls": calls}

    def time(self, command: dict[str, Any]) -> dict[str, Any]:
        sets = self.timing_sets
        params = TimingParams(**command["params"])
        flusher = timing.Flusher(self.device, int(command["flush_bytes"]))
        kept: dict[int, Any] = {}
        raw = self._run_submission(timing.measure, self.model, sets, self.device, params, flusher,
                                   kept.__setitem__)
        self._synchronize()
        last = [flatten_outputs(kept.get(i)) for i in range(len(sets))]
        tensorfile.save(Path(command["outputs"]), [[v if type(v) is _Tensor else None for v in o] for o in last])
        return {"device_ms": list(raw.device_ms), "wall_ms": list(raw.wall_ms), "stop_reason": raw.stop_reason,
                "clock": raw.clock, **self._integrity()}

    def _integrity(self) -> dict[str, Any]:
        replaced = [name for name, (owner, attr, original) in _watched.items()
                    if getattr(owner, attr, None) is not original]
        flags = precision_flags.snapshot()
        changed = sorted(k for k in flags if flags[k] != self.flags_before.get(k))
        return {"replaced_functions": replaced, "precision_flags_changed": changed,
                "extra_threads": max(0, threading.active_count() - self.threads_before)}


def _poison(device: torch.device, sizes: list[int]) -> None:
    """Fill the caching allocator's free blocks with NaN bytes so outputs that are never written
    cannot hold stale values that happen to be right."""
    if device.type != "cuda":
        return
    blocks = [torch.empty(n, dtype=torch.uint8, device=device) for n in sizes for _ in range(2) if n > 0]
    for block in blocks:
        block.fill_(0xFF)
    del blocks


def _format_exception(exc: BaseException) -> str:
    lines = traceback.format_exception(type(exc), exc, exc.__traceback__)
    return "".join(lines[-40:])


def main() -> None:
    channel = ChildChannel.from_stdio()
    harness = Harness()
    while (command := channel.receive()) is not None:
        if command.get("op") == "exit":
            break
        channel.send(harness.handle(command))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
