"""Seeded random draws of problem code (get_inputs(), a reference's constructor) without a process-wide lock.

Problem code draws from torch's global generator: `torch.rand(M, K)` takes no generator. Seeding that one
generator and drawing had to be one thread at a time, and the judges of a GPU host share one process: while one
drew a problem's 8 GiB of inputs (seconds of serial CPU work per trial), the other GPUs' judges waited to draw
even a few kilobytes, and a sweep on four GPUs ran slower than on one.

So each draw first runs under a thread-local torch function mode that hands the calls which take a generator
a private one, seeded the same way (a generator seeded with `s` gives what the global one gives after
`torch.manual_seed(s)`). A draw that may have reached a global generator anyway is made again, the old way,
alone, and that problem's draws go the old way from then on. It shows in one of two ways: the mode saw a
random call it could not redirect (a draw on a GPU, a *_like factory), or the global CPU generator's state
moved (a call the mode does not know, the problem's own `manual_seed`; or, rarely, another thread's CPU
dropout, which costs only speed). Private draws share the gate; old-way draws hold it alone, so no private
draw sees the global state move because of one.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, TypeVar

import torch
from torch.overrides import TorchFunctionMode

from kernelgrade.evaluator import device_draws
from kernelgrade.evaluator.shared_lock import SharedLock

log = logging.getLogger(__name__)

T = TypeVar("T")


# The random calls that take a `generator` in every torch we support. The *_like factories take one only in
# newer versions; a draw through them reaches the global generator and goes the old way.
_TAKES_GENERATOR = frozenset({
    torch.rand, torch.randn, torch.randint, torch.randperm, torch.normal, torch.bernoulli, torch.multinomial,
    torch.poisson, torch.Tensor.uniform_, torch.Tensor.normal_, torch.Tensor.random_, torch.Tensor.bernoulli_,
    torch.Tensor.exponential_, torch.Tensor.cauchy_, torch.Tensor.log_normal_, torch.Tensor.geometric_,
    *device_draws.INITIALIZERS,
})
_RANDOM = _TAKES_GENERATOR | {torch.rand_like, torch.randn_like, torch.randint_like}


# Private draws share it; old-way draws hold it alone.
_GATE = SharedLock()


class _PrivateGenerator(TorchFunctionMode):
    """Hands `generator` to the CPU draws that take one and were given none; notes the random calls it could
    not redirect."""

    def __init__(self, seed: int, on: torch.device | None, kept: bool = False) -> None:
        """`on`: the GPU that draws large CPU inputs (device_draws.py); None: every draw on the CPU. `kept`: those
        it draws stay there (host/device_inputs.py), and a draw of `on`'s own takes its generator."""
        super().__init__()
        self.generator = torch.Generator().manual_seed(seed)
        self.on_generator = torch.Generator(device=on).manual_seed(seed) if on is not None else None
        self.kept = kept and on is not None
        self.missed = False

    def __torch_function__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        kwargs = dict(kwargs or {})
        if func in _RANDOM and kwargs.get("generator") is None:
            generator = self._generator_for(func, device_draws.draws_on(args, kwargs))
            if generator is None:
                self.missed = True
            elif generator is self.generator:
                made = self._drawn_on_device(func, args, kwargs)
                if made is not None:
                    return made
            kwargs["generator"] = generator
        return func(*args, **kwargs)

    def _generator_for(self, func: Any, device: torch.device) -> torch.Generator | None:
        """The private generator a random call on `device` takes; None where it cannot take one."""
        if func not in _TAKES_GENERATOR:
            return None
        if device.type == "cpu":
            return self.generator
        if self.kept and self.on_generator is not None and device == self.on_generator.device:
            return self.on_generator  # a draw from a tensor kept there: `mask.bernoulli_(0.5)`
        return None

    def _drawn_on_device(self, func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> torch.Tensor | None:
        """The call's tensor drawn on the device of `on_generator`, where there is one and the call is of a form
        device_draws knows. A device out of memory is the judge's (its evaluation retries); anything else drawn
        there goes back to the CPU's generator, which gives what torch always gave."""
        if self.on_generator is None:
            return None
        try:
            return device_draws.drawn(func, args, kwargs, self.on_generator.device, self.on_generator, self.kept)
        except torch.cuda.OutOfMemoryError:
            raise
        except Exception:
            log.warning("drawing %s on %s failed; drawn on the CPU", getattr(func, "__name__", func),
                        self.on_generator.device, exc_info=True)
            return None


class SeededDraws:
    """One problem's seeded draws: privately while its code allows, else through the global generator alone."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.global_only = False

    def run(self, seed: int, draw: Callable[[], T], on: torch.device | None = None,
            weights_on: torch.device | None = None, kept: bool = False) -> T:
        """draw()'s value with torch seeded with `seed`; the global generators' states are as they were. `on`: the
        device that draws the large CPU tensors of rand, randn and randint (device_draws.py), for inputs only;
        `kept`: they stay there (host/device_inputs.py); `weights_on`: the device that draws a constructor's large
        weights, as the run child's are drawn."""
        if not self.global_only:
            with _GATE.shared():
                before = torch.get_rng_state()
                private = _PrivateGenerator(seed, on, kept)
                # The weights mode is entered last, so it sees a constructor's draws first: those it draws on the
                # device never reach the private generator.
                with private, device_draws.weights_drawn(weights_on, seed):
                    value = draw()
                if not private.missed and torch.equal(before, torch.get_rng_state()):
                    return value
                torch.set_rng_state(before)
            self.global_only = True
            log.info("problem %s draws from torch's global generator; its draws take turns with other judges'",
                     self.name)
        with _GATE.exclusive(), torch.random.fork_rng(devices=_initialized_devices()):
            torch.manual_seed(seed)
            with device_draws.weights_drawn(weights_on, seed):
                return draw()

    @staticmethod
    def unseeded(draw: Callable[[], T]) -> T:
        """draw()'s value from the global generators as they are (get_init_inputs(), which the run child does
        not repeat), never in the middle of an old-way draw."""
        with _GATE.shared():
            return draw()


def _initialized_devices() -> list[int]:
    """The GPUs whose generators an old-way draw may move, restored after it."""
    return list(range(torch.cuda.device_count())) if torch.cuda.is_available() else []
