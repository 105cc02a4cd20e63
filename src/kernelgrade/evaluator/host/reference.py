"""The judge's trusted side of a problem: seeded inputs, reference outputs, the float64 oracle.

None of this runs in the submission's process; expected outputs never leave the judge.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import math
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch.overrides import TorchFunctionMode

from kernelgrade.evaluator import device_draws
from kernelgrade.evaluator.compare import Expected, RoundedOutputs, flatten_outputs
from kernelgrade.evaluator.device_cache import leave_room
from kernelgrade.evaluator.host.device_inputs import DeviceInputs
from kernelgrade.evaluator.host.device_room import ORACLE_SHARE
from kernelgrade.evaluator.host.environment import device_class
from kernelgrade.evaluator.host.model_copy import copy_model
from kernelgrade.evaluator.host.seeded_draws import SeededDraws
from kernelgrade.evaluator.host.trial_store import StoredTiming, StoredTrial, TrialStore, digest, problem_version
from kernelgrade.evaluator.integrity import precision_flags
from kernelgrade.evaluator.integrity.tensor_checks import fingerprints
from kernelgrade.evaluator.problem_memory import float64_bytes
from kernelgrade.evaluator.request import PrecisionKind, ProblemSpec
from kernelgrade.evaluator.rounding import Rounding, round_to
from kernelgrade.evaluator.source_module import load_problem_module
from kernelgrade.evaluator.timing import device_synchronize
from kernelgrade.evaluator.wire import tensorfile


def derive_seed(seed: int, kind: str, index: int, secret: str) -> int:
    """Seeds for trials and timing sets; with a secret, nobody outside the deployment can predict them."""
    digest = hashlib.sha256(f"{secret}|{seed}|{kind}|{index}".encode()).hexdigest()
    return int(digest[:15], 16)


def to_device(values: Sequence[Any], device: torch.device) -> list[Any]:
    return [v.to(device) if isinstance(v, torch.Tensor) else v for v in values]


@dataclass(frozen=True)
class TrialData:
    inputs: list[Any]
    expected: Expected
    fingerprints: tuple[int, ...]  # of the pristine inputs, to tell whether a call changed them
    # Where the expected outputs came from for this call of trial(): "computed", "stored" (the trial store on
    # disk) or "kept" (this judge's memory).
    prepared: str = "computed"
    # Seconds its making took, by part: ("inputs", s) and ("expected", s); none for a kept trial.
    made_s: tuple[tuple[str, float], ...] = ()


@dataclass(frozen=True)
class Footprint:
    """Memory a kept trial holds: on the judge's device (expected outputs, oracles) and in host memory
    (its inputs; everything, on the CPU)."""

    device: int = 0
    host: int = 0

    def __add__(self, other: Footprint) -> Footprint:
        return Footprint(self.device + other.device, self.host + other.host)

    @classmethod
    def of(cls, values: Sequence[Any]) -> Footprint:
        on_device = _nbytes([v for v in values if isinstance(v, torch.Tensor) and v.device.type != "cpu"])
        return cls(on_device, _nbytes(values) - on_device)


# Asked before a trial is kept: may this much more be held? (reference_cache.py makes room or says no.)
Room = Callable[[Footprint], bool]
# Called when the device ran out under the reference: let go of what other problems keep (reference_cache.py).
Release = Callable[[], None]


class Reference:
    def __init__(self, problem: ProblemSpec, device: torch.device, weight_seed: int, keep_trials: int = 0,
                 room: Room | None = None, release: Release | None = None, store: TrialStore | None = None) -> None:
        """`keep_trials`: how many trials' inputs and expected outputs to keep for later calls of trial()
        (reference_cache.py), each as `room` allows; `release` lets go of what other problems keep; `store`:
        where trials' expected outputs are kept on disk (trial_store.py), for this judge's restarts and others."""
        self.problem = problem
        self.keep_trials, self._room, self._release = keep_trials, room, release
        self._store = store
        self._store_prefix = (problem_version(problem), device_class(device), torch.__version__, weight_seed,
                              device_draws.DRAW_SCHEME)
        self._trials: dict[int, TrialData] = {}
        self.kept = Footprint()
        # Seen to change its parameters or buffers while computing a trial: nothing of it is stored from then on.
        self.changes_when_run = False
        # The reference's own time for one call, warm (the shortest seen): what settle.py scales.
        self.forward_s = math.inf
        # The bytes of one call's outputs (the largest seen): what a child writes back per call.
        self.output_bytes = 0
        self.device = device
        self.module = load_problem_module(problem.source, problem.name)
        self._draws = SeededDraws(problem.name)
        self._device_inputs = DeviceInputs(problem.name, self._draws, device) if device.type == "cuda" else None
        self.init_inputs = self._draws.unseeded(lambda: list(self.module.get_init_inputs()))
        # Seeded as the run child seeds ModelNew's construction, so layers built alike start with equal weights.
        self._weight_seed = weight_seed
        self.model = self._built().to(device)
        self._oracle_models: dict[torch.device, torch.nn.Module] = {}
        self._rounded_models: dict[Rounding, torch.nn.Module] = {}

    def models(self) -> Footprint:
        """The memory of the reference's weights and buffers, with its float64 and rounded copies."""
        modules = [self.model, *self._oracle_models.values(), *self._rounded_models.values()]
        return Footprint.of([t for m in modules for t in [*m.parameters(), *m.buffers()]])

    def make_inputs(self, seed: int) -> list[Any]:
        """The problem's own get_inputs() under a private seed, on the CPU as the format says; its large random
        tensors drawn on the GPU of a CUDA problem (device_draws.py). Other judges of this process, and the
        background thread that makes timing inputs, draw meanwhile (seeded_draws.py)."""
        on_gpu = self.device if self.device.type == "cuda" else None
        return self._draws.run(seed, lambda: list(self.module.get_inputs()), on=on_gpu)

    def trial(self, seed: int) -> TrialData:
        """A trial's inputs, what the judge expects for them and the inputs' fingerprints; kept for the next
        evaluation when there is room. The kept copy holds no lower-precision emulations: each evaluation gets
        its own (computed only if its comparison needs them), so that they never outgrow the budget the copy was
        kept under, and the copy holds nothing that leads back to this reference. Such a cycle (reference ->
        kept trial -> emulation -> reference) held every let-go problem's device memory until Python's next full
        garbage collection (docs/grading.md, References and their expected outputs)."""
        kept = self._trials.get(seed)
        if kept is not None:
            return self._with_emulations(dataclasses.replace(kept, prepared="kept"))
        started = time.perf_counter()
        inputs, placed = self._inputs_placed(seed)
        # Summed on the judge's device, where it takes microseconds (a quarter second for 128 MB on a CPU core),
        # and before the reference runs on these copies.
        pristine = tuple(fingerprints(placed))
        inputs_made = time.perf_counter()
        key = digest(*self._store_prefix, seed)
        stored = self._stored(key, inputs, pristine)
        trial = stored or TrialData(inputs, self._computed(key, inputs, placed, pristine), pristine)
        size = Footprint.of([*trial.inputs, *trial.expected.refs, *(trial.expected.oracles or [])])
        if len(self._trials) < self.keep_trials and self._room is not None and self._room(size):
            bare = dataclasses.replace(trial.expected, rounded=None)
            self._trials[seed] = dataclasses.replace(trial, expected=bare)
            self.kept += size
        made = (("inputs", inputs_made - started), ("expected", time.perf_counter() - inputs_made))
        return dataclasses.replace(trial, made_s=made)

    def _inputs_placed(self, seed: int) -> tuple[list[Any], list[Any]]:
        """A trial's inputs, and copies on the device for the reference to run on: made there, where the
        problem's code allows (host/device_inputs.py), else copied there."""
        made = self._device_inputs.made(seed, lambda: list(self.module.get_inputs())) if self._device_inputs else None
        if made is not None:
            return made
        inputs = self.make_inputs(seed)
        return inputs, _copies_on(inputs, self.device)

    @property
    def stores(self) -> bool:
        """Whether trials this reference computes are kept on disk: it has a store (a reference known to change
        when it runs gets none, reference_cache.py) and has not been seen to change."""
        return self._store is not None and not self.changes_when_run

    def stored_timing(self, protocol: str) -> StoredTiming | None:
        """The timing distribution kept for this reference under `protocol` (the timing parameters and device,
        judge/reference_timing.py); None where there is none or the reference stores nothing."""
        if self._store is None or not self.stores:
            return None
        return self._store.timing(digest(*self._store_prefix, protocol))

    def keep_timing(self, protocol: str, timing: StoredTiming) -> None:
        if self._store is not None and self.stores:
            self._store.save_timing(digest(*self._store_prefix, protocol), timing)

    def state(self) -> list[int]:
        """Fingerprints of the reference's parameters and buffers: they change where running it changes it."""
        return fingerprints([*self.model.parameters(), *self.model.buffers()])

    def _stored(self, key: str, inputs: list[Any], pristine: tuple[int, ...]) -> TrialData | None:
        """The trial under `key` from the store, where it holds one computed from inputs with these fingerprints."""
        found = self._store.load(key, self.device) if self._store else None
        if found is None or found.fingerprints != pristine:
            return None
        self.forward_s = min(self.forward_s, found.forward_s)
        self.output_bytes = max(self.output_bytes, _nbytes(found.refs))
        if found.oracles is None:
            return TrialData(inputs, Expected(found.refs), pristine, "stored")
        return TrialData(inputs, Expected(found.refs, found.oracles, self._emulations(inputs)), pristine, "stored")

    def _computed(self, key: str, inputs: list[Any], placed: list[Any], pristine: tuple[int, ...]) -> Expected:
        """The trial's expected outputs, computed; stored where the reference did not change by running (its
        outputs could otherwise depend on the calls before)."""
        before = self.state() if self._store is not None else None
        expected = self._expected(inputs, placed)
        if self._store is not None and before != self.state():
            self.changes_when_run = True
        if self._store is not None and self.stores:
            trial = StoredTrial(list(expected.refs), None if expected.oracles is None else list(expected.oracles),
                                pristine, self.forward_s)
            self._store.save(key, trial)
        return expected

    def forward(self, inputs: Sequence[Any]) -> Any:
        started = time.perf_counter()
        with torch.no_grad():
            out = self.model(*inputs)
        device_synchronize(self.device)
        self.forward_s = min(self.forward_s, time.perf_counter() - started)
        return out

    def expected(self, inputs: Sequence[Any]) -> Expected:
        """Reference outputs and, where the policy asks for it, the float64 oracle's and the lower-precision
        emulations the comparison may need; all stay on the judge's device, where comparing them is fast."""
        return self._expected(inputs, _copies_on(inputs, self.device))

    def _expected(self, inputs: Sequence[Any], placed: list[Any]) -> Expected:
        """`placed`: copies of `inputs` on the device for the reference to run on (and write into, if it does);
        the oracle and the roundings start again from `inputs`."""
        with precision_flags.held():
            refs = self._outputs_in_room(inputs, placed)
            self.output_bytes = max(self.output_bytes, _nbytes(refs))
            if not self._wants_oracle(refs):
                return Expected(refs)
            oracles = self._oracle(inputs, _nbytes(refs))
        return Expected(refs, oracles, self._emulations(inputs))

    def _emulations(self, inputs: Sequence[Any]) -> RoundedOutputs:
        """The reference's outputs on `inputs` rounded to a lower precision, computed when first asked for."""
        return functools.cache(functools.partial(self._rounded, inputs))

    def _with_emulations(self, trial: TrialData) -> TrialData:
        """A kept trial as an evaluation gets it: with emulations of its own where it has oracles."""
        if trial.expected.oracles is None:
            return trial
        emulated = dataclasses.replace(trial.expected, rounded=self._emulations(trial.inputs))
        return dataclasses.replace(trial, expected=emulated)

    def _outputs_in_room(self, inputs: Sequence[Any], placed: list[Any]) -> list[torch.Tensor]:
        """The reference's outputs on `placed`. Where the device runs out under it, the judge lets go of what it
        keeps for other problems, hands its cache back and runs it once more, on fresh copies of `inputs` (the
        failed call may have written into `placed`); a second out-of-memory is the grader's error, retried
        later, never the submission's verdict."""
        try:
            return [t.detach() for t in flatten_outputs(self.forward(placed))]
        except torch.cuda.OutOfMemoryError:
            if self._release is not None:
                self._release()
            leave_room(self.device)
        return [t.detach() for t in flatten_outputs(self.forward(_copies_on(inputs, self.device)))]

    def _wants_oracle(self, refs: list[torch.Tensor]) -> bool:
        policy = self.problem.precision.kind
        return policy is not PrecisionKind.TOLERANCE and any(r.dtype == torch.float32 for r in refs)

    def _oracle(self, inputs: Sequence[Any], output_bytes: int) -> list[torch.Tensor]:
        """The float64 oracle's outputs: on the judge's device where its float64 inputs, weights and outputs
        fit in what is free there, else, or where the device runs out all the same, on the host (slower,
        never wrong: the comparison moves it to the device a chunk at a time)."""
        need = oracle_bytes(inputs, self.model, output_bytes)
        if self.device.type == "cuda" and self._room_for_oracle(need):
            try:
                return self._oracle_on(self.device, inputs)
            except torch.cuda.OutOfMemoryError:
                self._oracle_models.pop(self.device, None)
                leave_room(self.device)
        return self._oracle_on(torch.device("cpu"), inputs)

    def _room_for_oracle(self, need: int) -> bool:
        """Whether `need` bytes of float64 oracle fit on the device, once what the judge keeps for other problems
        is let go where they would not fit otherwise (but would on the device as a whole). On the host the
        oracle is slower by far: in a stream's second pass, with the other problems' references kept, KernelBench's
        23_Softmax re-checked its timed outputs against 5 host oracles, 54 s of one verdict's device time."""
        if need <= leave_room(self.device) * ORACLE_SHARE:
            return True
        total = torch.cuda.mem_get_info(self.device)[1]
        if self._release is None or need > total * ORACLE_SHARE:
            return False
        self._release()
        return need <= leave_room(self.device) * ORACLE_SHARE

    def _oracle_on(self, device: torch.device, inputs: Sequence[Any]) -> list[torch.Tensor]:
        if device not in self._oracle_models:
            self._oracle_models[device] = _in_float64(self._copy(device), device)
        upcast = [v.to(device).double() if isinstance(v, torch.Tensor) and v.is_floating_point() else v
                  for v in to_device(inputs, device)]
        with torch.no_grad(), Float64Factories():
            out = self._oracle_models[device](*upcast)
        return [t.detach() for t in flatten_outputs(out)]

    def _built(self) -> torch.nn.Module:
        """The problem's Model, constructed as the run child constructs ModelNew: under the weight seed, its large
        weights drawn on the device (device_draws.py)."""
        model: torch.nn.Module = self._draws.run(self._weight_seed, lambda: self.module.Model(*self.init_inputs),
                                                 weights_on=device_draws.weights_device(self.device))
        return model

    def _copy(self, device: torch.device) -> torch.nn.Module:
        """A copy of the reference that is wholly its own, on `device`, holding its current values (model_copy.py)."""
        return copy_model(self.model, lambda: self.module.Model(*self.init_inputs), self._built, device)

    def _rounded(self, inputs: Sequence[Any], rounding: Rounding) -> list[torch.Tensor]:
        """The reference in fp32 on inputs, weights and buffers rounded to `rounding`."""
        if rounding not in self._rounded_models:
            model = self._copy(self.device)
            with torch.no_grad():
                for tensor in [*model.parameters(), *model.buffers()]:
                    tensor.copy_(round_to(tensor, rounding))
            self._rounded_models[rounding] = model
        rounded = [round_to(v, rounding) if isinstance(v, torch.Tensor) else v for v in to_device(inputs, self.device)]
        with torch.no_grad(), precision_flags.held():
            out = self._rounded_models[rounding](*rounded)
        device_synchronize(self.device)
        return [t.detach() for t in flatten_outputs(out)]


def _in_float64(model: torch.nn.Module, device: torch.device) -> torch.nn.Module:
    """`model` on `device` in float64: parameters and buffers, and the float tensors it holds as attributes."""
    model = model.to(device).double()
    for module in model.modules():
        for key, value in list(vars(module).items()):
            if isinstance(value, torch.Tensor) and value.is_floating_point():
                setattr(module, key, value.to(device).double())
    return model


class Float64Factories(TorchFunctionMode):
    """Held around the float64 oracle's forward(): a tensor forward() makes itself without naming a dtype (an
    initial state `torch.randn(layers, batch, hidden, device=x.device)`, say) is float64 like the oracle's
    weights and inputs, where it would be fp32 and meet them in an op that takes one dtype only. Modes are per
    thread: the judge's other threads make their tensors as before."""

    def __torch_function__(self, func: Callable[..., Any], types: Any, args: Sequence[Any] = (),
                           kwargs: dict[str, Any] | None = None) -> Any:
        kwargs = dict(kwargs or {})
        if func in _DEFAULT_DTYPE_FACTORIES and kwargs.get("dtype") is None:
            kwargs["dtype"] = torch.float64
        return func(*args, **kwargs)


# Factories whose dtype, unnamed, is torch's default (float32): not those that infer it from their values.
_DEFAULT_DTYPE_FACTORIES = frozenset({torch.rand, torch.randn, torch.zeros, torch.ones, torch.empty, torch.eye,
                                      torch.linspace, torch.logspace})


def _copies_on(values: Sequence[Any], device: torch.device) -> list[Any]:
    """Tensors copied onto the device even where they are there already: a reference that writes into its
    inputs must change neither the caller's values nor the oracle's."""
    return [v.to(device, copy=True) if isinstance(v, torch.Tensor) else v for v in values]


def oracle_bytes(inputs: Sequence[Any], model: torch.nn.Module, output_bytes: int) -> int:
    """What the float64 oracle holds at least: its inputs, weights and outputs as float64 (twice their fp32
    bytes; the outputs' fp32 size is `output_bytes`). Activations inside forward() come on top."""
    tensors = [t for t in [*inputs, *model.parameters(), *model.buffers()] if isinstance(t, torch.Tensor)]
    return float64_bytes(tensors) + 2 * output_bytes


def _nbytes(values: Sequence[Any]) -> int:
    return sum(v.numel() * v.element_size() for v in values if isinstance(v, torch.Tensor))


def save_timing_sets(reference: Reference, work_dir: Path, count: int, seed: int, secret: str,
                     cancelled: threading.Event | None = None,
                     most: Callable[[int], int] | None = None) -> tuple[list[list[Any]], list[Path]]:
    """An evaluation's timing input sets (docs/timing.md), as values for the judge and as files for a child. Once
    `cancelled` is set no further set is begun: the sets made so far are returned. `most`: how many sets to make
    at most, given the first one's size in bytes (more than the device could hold are not written)."""
    sets: list[list[Any]] = []
    paths: list[Path] = []
    k = 0
    while k < count and not (cancelled is not None and cancelled.is_set()):
        sets.append(reference.make_inputs(derive_seed(seed, "timing", k, secret)))
        paths.append(work_dir / f"timing_{k}.kgt")
        tensorfile.save(paths[-1], sets[-1], workers=tensorfile.WRITE_WORKERS)
        if k == 0 and most is not None:
            count = max(1, min(count, most(tensorfile.size(paths[0]))))
        k += 1
    return sets, paths
