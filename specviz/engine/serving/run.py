"""A compared run: speculative decoding beside the target-only baseline, on one prompt and settings.

This is the layer every consumer of a live run sits on (the web app, the benchmark's UI timing,
notebooks). It owns both decoders, steps them, restarts when the settings change, times both
sides fairly and hands out one metric set (`specviz.core.metrics`).

Fair timing. After a click the first forward pays for whatever the machine was doing (a
browser repainting, caches gone cold), so neither side may always go first: odd steps run the
speculative round and then advance the baseline to the same number of tokens; even steps first
advance the baseline by as many tokens as the previous round emitted, then run the round (and
the baseline catches up on whatever is left at the next odd step, or at once if the run ended).

Alone. A step's timed forwards hold the fair clock `TIMED` (clock.py) for its one round and catch-up, as each
slice of a race does (race.py): within this process no two timed stretches overlap, so no visitor's figures
are measured beside another's forwards, and no one holds the clock for longer than a round. A Step waits for
it in arrival order, at most until its event's deadline. On a CPU a Step first waits, briefly and outside the
clock, for the other processes (the browser after a click) to go quiet (engine/serving/quiet.py).

Bounded memory. Only the WARM_RUNS most recently stepped runs keep their KV caches; a colder run
hibernates into plain data (`RunState`, as on ZeroGPU) and its caches are rebuilt, one prefill
outside the timed forwards, at its next step. A finished run drops its caches at once.
"""
from __future__ import annotations

import itertools
import threading
import time
import weakref
from collections import OrderedDict
from dataclasses import dataclass, replace

from ...core.config import DecodeConfig
from ...core.draft_length import DraftLengthRule
from ...core.metrics import metric_set
from ...core.trace import StepTrace
from .. import limits, memory
from ..decoding.base import prepare_prompt
from ..decoding.decoders import DecoderState, DecodingFinished, SpeculativeDecoder, TargetOnlyDecoder, check_prompt
from ..decoding.factory import make_decoder
from ..models.loading import ModelPair, is_cached, load_pair, on_evict
from ..models.presets import PairRef
from ..settings import current as current_deployment
from . import auto_gamma, costs, zerogpu
from .clock import TIMED
from .quiet import before_timed_forwards


@dataclass(frozen=True)
class RunSettings:
    """Which models, which prompt, which knobs: a change of any starts a new run."""
    pair: PairRef
    prompt: str
    config: DecodeConfig
    device: str | None = None  # None: picked automatically (cuda, mps, cpu)

    def load(self) -> ModelPair:
        """The pair from the cache (loaded if need be, waiting at most SPECVIZ_LOAD_TIMEOUT_S)."""
        return load_pair(self.pair, device=self.device, timeout=current_deployment().load_timeout_s)


@dataclass
class RunState:
    """Both decoders' progress as plain data: what crosses ZeroGPU's process boundary."""
    spec: DecoderState
    base: DecoderState
    draft_length: DraftLengthRule | None = None  # gamma auto: the rule the run drafts by, measured at its first step


def decode_config(pair: ModelPair, settings: RunSettings, state: RunState | None = None) -> DecodeConfig:
    """The run's DecodeConfig as its decoders take it: with gamma auto, its rule (the one `state` carries, else
    the pair's, measured first: serving.auto_gamma, every timed measurement holding the fair clock)."""
    if state is not None and state.draft_length is not None:
        return replace(settings.config, draft_length=state.draft_length)
    if settings.config.gamma_auto:  # a prompt the run would refuse is refused before the rule is measured for it
        prepare_prompt(pair, settings.prompt, settings.config)
    return auto_gamma.resolve(pair, settings.config, hold=lambda: TIMED)


def _catch_up(base: TargetOnlyDecoder, tokens: int) -> None:
    while base.counters.tokens < tokens and not base.finished:
        base.step()


def advance_both(spec: SpeculativeDecoder, base: TargetOnlyDecoder) -> StepTrace:
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
    """Both sides, from the start or from `state`. From the start the prompt is read once: the baseline's
    target cache is a copy of the speculative side's, as `fork` makes it (one prefill of the target, not two)."""
    config = decode_config(pair, settings, state)
    if state is None:
        spec = make_decoder(pair, settings.prompt, config)
        return spec, TargetOnlyDecoder(pair, settings.prompt, config, prefilled=spec)
    return (make_decoder(pair, settings.prompt, config, resume=state.spec),
            TargetOnlyDecoder(pair, settings.prompt, config, resume=state.base))


@zerogpu.on_gpu(duration=zerogpu.STEP_GPU_SECONDS)
def stateless_step(settings: RunSettings, state: RunState | None) -> tuple[RunState, StepTrace]:
    """One step from plain data to plain data: decoders rebuilt from `state` (their KV caches
    recomputed from the token ids), stepped, and exported. Runs inside spaces.GPU on ZeroGPU."""
    spec, base = _decoders(settings.load(), settings, state)
    trace = advance_both(spec, base)
    return RunState(spec=spec.state(), base=base.state(), draft_length=spec.config.draft_length), trace


class WarmRuns:
    """The runs that keep their KV caches between steps: the `capacity` most recently stepped, as long as
    their caches' bytes (`memory.held_bytes`) stay within `budget_bytes` (None: `memory.warm_budget` of the
    device, SPECVIZ_WARM_BYTES).

    A process-wide cache of memory, like the loaded model pairs, not of anyone's results: a run
    pushed out hibernates (exactly resumable), so a Space's cache memory stays bounded however
    many tabs are open or were left open, and however long their prompts."""

    def __init__(self, capacity: int, budget_bytes: int | None = None):
        if isinstance(capacity, bool) or not isinstance(capacity, int) or capacity < 0:
            raise ValueError(f"the number of warm runs must be a whole number >= 0, not {capacity!r}")
        self.capacity, self.budget_bytes = capacity, budget_bytes
        self._order: OrderedDict[int, weakref.ref] = OrderedDict()  # key -> run, coldest first
        self._keys = itertools.count()
        self._lock = threading.Lock()

    def key(self) -> int:
        return next(self._keys)

    def budget(self, device) -> int:
        return self.budget_bytes if self.budget_bytes is not None else memory.warm_budget(device)

    def touch(self, run: ComparedRun) -> None:
        """`run` just stepped: it is the warmest; runs beyond the capacity, then the coldest while the warm
        runs' caches hold more bytes than the budget, hibernate (the warmest stays: it is the one in use)."""
        with self._lock:
            for dead in [k for k, ref in self._order.items() if ref() is None]:
                del self._order[dead]
            self._order.pop(run.key, None)
            self._order[run.key] = weakref.ref(run)
            cold = [self._order.popitem(last=False)[1]() for _ in range(len(self._order) - self.capacity)]
            spec = run.spec  # read once: another thread may hibernate the run meanwhile
            if spec is not None:
                runs = [ref() for ref in self._order.values()]
                held = [other.kv_bytes() if other is not None else 0 for other in runs]
                total, budget = sum(held), self.budget(spec.pair.device)
                while total > budget and len(self._order) > 1:
                    self._order.popitem(last=False)
                    cold.append(runs.pop(0))
                    total -= held.pop(0)
        for other in cold:  # one stepping right now is skipped: it touches again when its step ends
            if other is not None:
                other.hibernate()

    def held_bytes(self) -> int:
        """The KV bytes the warm runs hold now."""
        with self._lock:
            runs = [ref() for ref in self._order.values()]
        return sum(run.kv_bytes() for run in runs if run is not None)

    def release_pair(self, pair: ModelPair) -> None:
        """The pair cache dropped `pair`: every warm run on it hibernates, so no run keeps a copy of
        weights the cache no longer owns (one stepping now hibernates when its step ends)."""
        with self._lock:
            runs = [ref() for ref in self._order.values()]
        for run in runs:
            if run is not None and run.spec is not None and run.spec.pair is pair:
                run.hibernate()

    def forget(self, run: ComparedRun) -> None:
        with self._lock:
            self._order.pop(run.key, None)

    def __len__(self) -> int:
        with self._lock:
            return sum(ref() is not None and ref().warm for ref in self._order.values())


WARM_RUNS = WarmRuns(current_deployment().warm_runs)  # >= a class of 30 short prompts; bytes bound long ones
on_evict(WARM_RUNS.release_pair)


class ComparedRun:
    """One prompt and settings: the speculative decoder, the target-only baseline, their traces."""

    def __init__(self, settings: RunSettings, *, stateless: bool | None = None, warm: WarmRuns | None = None):
        self.settings = settings
        self.stateless = zerogpu.stateless() if stateless is None else stateless
        self.traces: list[StepTrace] = []
        self._lock = threading.Lock()  # one step at a time, whoever calls
        self._state: RunState | None = None
        self.rebuilt_s = 0.0  # caches rebuilt after hibernation, not yet said (take_rebuilt_s)
        self._warm = WARM_RUNS if warm is None else warm
        self.key = self._warm.key()
        self.spec = self.base = None
        self._booked_calls = 0  # baseline forwards already in the cost book
        self.pair_key = None    # the pair's key in the cost book (None on ZeroGPU: the pair lives in the worker)
        if not self.stateless:  # load and prefill now: a bad prompt or pair fails before the first step
            pair = settings.load()
            self.pair_key = costs.pair_key(pair)
            self.spec, self.base = _decoders(pair, settings, None)
            kind = self.spec.cache_kind  # both models': "draft: static, target: cuda graphs" when they differ
            self.device = str(pair.device) + {"dynamic": "", "cuda graphs": " · CUDA graphs"}.get(kind, f" · {kind}")
            self._warm.touch(self)
        else:  # the worker tokenises and prefills; a bad prompt still fails here, before any GPU time
            check_prompt(settings.prompt)
            self.device = "GPU worker (ZeroGPU)"

    @property
    def config(self) -> DecodeConfig:
        return self.settings.config

    def _states(self) -> tuple:
        """Both sides: the live decoders while warm, else their plain-data states (or None, None)."""
        spec, base = self.spec, self.base
        if spec is not None and base is not None:
            return spec, base
        state = self._state  # hibernate() sets it before it clears the decoders
        return (state.spec, state.base) if state else (None, None)

    @property
    def capture_s(self) -> float:
        """Seconds both decoders spent capturing CUDA graphs when they were built (0 without graphs)."""
        return (self.spec.capture_s + self.base.capture_s) if self.spec is not None else 0.0

    def kv_bytes(self) -> int:
        """Bytes this run's KV caches hold (0 while it hibernates): both sides' target caches and the drafter's (a
        drafter with no model holds none)."""
        spec, base = self.spec, self.base
        if spec is None or base is None:
            return 0
        return spec.held_bytes() + base.held_bytes()

    @property
    def warm(self) -> bool:
        """Are the KV caches in memory (decoders alive)?"""
        return self.spec is not None

    def hibernate(self) -> bool:
        """Keep the run as plain data and drop its KV caches; the next step rebuilds them. Returns
        False, changing nothing, while the run is stepping (never waits: no lock-order deadlock)."""
        if self.stateless or not self._lock.acquire(blocking=False):
            return False
        try:
            if self.spec is not None:
                self._state = RunState(spec=self.spec.state(), base=self.base.state(),
                                       draft_length=self.spec.config.draft_length)
                self.spec = self.base = None
            return True
        finally:
            self._lock.release()

    def _wake(self) -> None:
        t0 = time.perf_counter()
        spec, base = _decoders(self.settings.load(), self.settings, self._state)
        self.spec, self.base = spec, base
        self._state = None
        self.rebuilt_s += time.perf_counter() - t0

    def take_rebuilt_s(self) -> float:
        """Seconds spent rebuilding hibernated caches since the last call (0: none were): for the status line."""
        seconds, self.rebuilt_s = self.rebuilt_s, 0.0
        return seconds

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
                self._state, trace = stateless_step(self.settings, self._state)
            else:
                if self.spec is None:
                    self._wake()
                before_timed_forwards(self.spec.pair.device)  # outside the clock: quiet waits overlap, never queue
                with TIMED:  # one round of each side; the wait for it ends at the event's deadline (ClockBusy)
                    trace = advance_both(self.spec, self.base)
                self._book()
            self.traces.append(trace)
        if not self.stateless:
            if self.finished:  # nothing more to decode: the caches are dead weight
                self._warm.forget(self)
                self.hibernate()
            else:
                self._warm.touch(self)
                spec = self.spec
                if spec is not None and not is_cached(spec.pair):  # evicted while it stepped: let go now
                    self.hibernate()
        return trace

    def _book(self) -> None:
        """This step's forward times go into the process's cost book (what a race's prediction reads)."""
        spec, base = self.spec, self.base
        calls = base.call_s[self._booked_calls:]
        self._booked_calls = len(base.call_s)
        costs.COSTS.record(costs.pair_key(spec.pair), costs.round_key(self.config), target_s=calls,
                           rounds=spec.records[-1:])

    def verify_costs(self) -> list[float] | None:
        """The pair's verify-cost curve [V(1) = 1, V(2), ...] from the cost book (None: never measured here)."""
        return costs.COSTS.verify_curve(self.pair_key) if self.pair_key else None

    def round_cost(self) -> dict | None:
        """The run's round beyond its forwards, as `core.round_host.as_whatif` reads a report's: its host work per
        round (flat: one gamma), the target-only step, a one-position pass (the cost book's) and the budget; None
        until both sides are timed and the pair's curve measured."""
        one_pass = costs.COSTS.one_pass_s(self.pair_key) if self.pair_key else None
        m = self.metrics() if one_pass else None
        if not m or not m.get("steps") or not m.get("target_ms"):
            return None
        host_ms = m["round_host_share"] * 1e3 * m["wall_s"] / m["steps"]
        return {"host_ms_line": [host_ms, 0.0], "target_only_step_ms": m["target_ms"], "one_pass_ms": 1e3 * one_pass,
                "forward_share": 1e3 * one_pass / m["target_ms"], "max_new_tokens": self.config.max_new_tokens}

    def measure_verify_costs(self) -> float:
        """Measure the pair's verify-cost curve where the book has none (once per pair and process, every n's passes
        holding the fair clock; the event's deadline checked between them); the seconds it took (0: nothing done, or
        the deadline came first: a later Step measures it)."""
        spec = self.spec
        if self.stateless or spec is None or self.verify_costs() is not None:
            return 0.0
        start = time.perf_counter()
        before_timed_forwards(spec.pair.device)
        try:
            costs.pair_verify_costs(spec.pair, hold=lambda: TIMED)
        except limits.EventTimeout:
            return 0.0
        return time.perf_counter() - start

    def metrics(self) -> dict:
        spec, base = self._states()
        return metric_set(spec.records if spec else [], base.call_s if base else [])

    def timings(self) -> tuple[list, list[float]]:
        """(the speculative side's StepRecords, the baseline's forward times): what metric_set takes,
        for pooling several runs into one metric set."""
        spec, base = self._states()
        return (list(spec.records) if spec else []), (list(base.call_s) if base else [])

    def baseline_tokens(self) -> int:
        _, base = self._states()
        return base.counters.tokens if base else 0
