"""A compared run: speculative decoding beside the target-only baseline, on one prompt and settings.

This is the layer every consumer of a live run sits on (the web app, the benchmark's UI timing,
notebooks). It owns both decoders, steps them, restarts when the settings change, times both
sides fairly and hands out one metric set (`specviz.metrics`).

Fair timing. After a click the first forward pays for whatever the machine was doing (a
browser repainting, caches gone cold), so neither side may always go first: odd steps run the
speculative round and then advance the baseline to the same number of tokens; even steps first
advance the baseline by as many tokens as the previous round emitted, then run the round (and
the baseline catches up on whatever is left at the next odd step, or at once if the run ended).
"""
from __future__ import annotations

import threading
from dataclasses import dataclass

from . import gpu
from .config import DecodeConfig
from .engine import DecoderState, DecodingFinished, SpeculativeDecoder, TargetOnlyDecoder, check_prompt
from .metrics import metrics
from .models import ModelPair, PairRef, load_pair
from .trace import StepTrace


@dataclass(frozen=True)
class RunSettings:
    """Which models, which prompt, which knobs: a change of any starts a new run."""
    pair: PairRef
    prompt: str
    config: DecodeConfig
    device: str | None = None  # None: picked automatically (cuda, mps, cpu)

    def load(self) -> ModelPair:
        return load_pair(self.pair, device=self.device)


@dataclass
class RunState:
    """Both decoders' progress as plain data: what crosses ZeroGPU's process boundary."""
    spec: DecoderState
    base: DecoderState


def _catch_up(base: TargetOnlyDecoder, tokens: int) -> None:
    while base.counters.tokens < tokens and not base.finished:
        base.step()


def advance(spec: SpeculativeDecoder, base: TargetOnlyDecoder) -> StepTrace:
    """One speculative round and the baseline's catch-up, in the fair order for this step number."""
    if spec.steps % 2 == 0:  # the coming step is odd: speculative first
        trace = spec.step()
        _catch_up(base, spec.counters.tokens)
    else:
        _catch_up(base, spec.counters.tokens + spec.records[-1].n_emitted)
        trace = spec.step()
        if spec.finished:  # no later step will let the baseline catch up
            _catch_up(base, spec.counters.tokens)
    return trace


def _decoders(pair: ModelPair, settings: RunSettings, state: RunState | None):
    spec_state, base_state = (state.spec, state.base) if state else (None, None)
    return (SpeculativeDecoder(pair, settings.prompt, settings.config, resume=spec_state),
            TargetOnlyDecoder(pair, settings.prompt, settings.config, resume=base_state))


def stateless_step(settings: RunSettings, state: RunState | None) -> tuple[RunState, StepTrace]:
    """One step from plain data to plain data: decoders rebuilt from `state` (their KV caches
    recomputed from the token ids), stepped, and exported. Runs inside spaces.GPU on ZeroGPU."""
    spec, base = _decoders(settings.load(), settings, state)
    trace = advance(spec, base)
    return RunState(spec=spec.state(), base=base.state()), trace


class ComparedRun:
    """One prompt and settings: the speculative decoder, the target-only baseline, their traces."""

    def __init__(self, settings: RunSettings, *, stateless: bool | None = None):
        self.settings = settings
        self.stateless = gpu.stateless() if stateless is None else stateless
        self.traces: list[StepTrace] = []
        self._lock = threading.Lock()  # one step at a time, whoever calls
        self._state: RunState | None = None
        self.spec = self.base = None
        if not self.stateless:  # load and prefill now: a bad prompt or pair fails before the first step
            pair = settings.load()
            self.device = str(pair.device)
            self.spec, self.base = _decoders(pair, settings, None)
        else:  # the worker tokenises and prefills; a bad prompt still fails here, before any GPU time
            check_prompt(settings.prompt)
            self.device = "GPU worker (ZeroGPU)"

    @property
    def config(self) -> DecodeConfig:
        return self.settings.config

    def _states(self) -> tuple[DecoderState | None, DecoderState | None]:
        if self.stateless:
            return (self._state.spec, self._state.base) if self._state else (None, None)
        return self.spec, self.base

    @property
    def finished(self) -> bool:
        spec, _ = self._states()
        return bool(spec and spec.finished)

    @property
    def tokens(self) -> list[int]:
        spec, _ = self._states()
        return list(spec.tokens) if spec else []

    def step(self) -> StepTrace:
        """One round of both sides, in the fair order; returns the speculative step's trace."""
        with self._lock:
            if self.finished:
                raise DecodingFinished("generation has finished: press Reset (or change a setting) to start again")
            if self.stateless:
                self._state, trace = gpu.on_gpu(stateless_step)(self.settings, self._state)
            else:
                trace = advance(self.spec, self.base)
            self.traces.append(trace)
            return trace

    def metrics(self) -> dict:
        spec, base = self._states()
        return metrics(spec.records if spec else [], base.call_s if base else [])

    def baseline_tokens(self) -> int:
        _, base = self._states()
        return base.counters.tokens if base else 0
