"""A race: the same prompt and seed decoded by target-only and by speculative decoding, in alternating slices.

A slice is one speculative round and the target-only forwards up to the same number of tokens, the side that
goes first alternating from slice to slice (the first forwards after a pause are the slowest); once one side
has ended, a slice is the other side's next round or its next γ + 1 forwards. Each slice holds the fair
clock (clock.py) alone, so no other visitor's forwards run inside it, and lets go of it after, so a Step
of another visitor waits one slice at most. Because the sides alternate slice by slice, a moment the machine
is busy slows both lanes alike instead of one whole lane.

Each lane's clock counts its own work only: the wall time of its forwards and sampling, not the other side's
forwards, nor the waits for the clock. A target-only token is ready after its forward, a speculative round's
tokens together after the round. The page replays both lanes on one clock. Both clocks start after the
prompt's prefill (one prefill: the target-only side starts from a copy of its cache), as the live counters do.

Before the lanes start the race's time is predicted from the pair's measured per-forward costs (costs.py; a
round shape never timed is priced from the pair's verify-cost curve, and planned again after the first slice):
one predicted past the event's deadline is capped to the tokens that fit, and one predicted long takes a
heavy slot. A race the deadline stops anyway ends between two forwards and shows what both lanes decoded.
"""
from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass, field, replace

from ...core.race_record import SPECULATIVE, TARGET_ONLY, Lane, Race
from ...core.trace import StepRecord
from .. import limits
from ..decoding.base import prepare_prompt
from ..decoding.decoders import TargetOnlyDecoder
from ..decoding.factory import make_decoder
from ..models.loading import ModelPair
from ..settings import current as current_deployment
from . import auto_gamma, costs, quiet, zerogpu
from .clock import TIMED
from .run import RunSettings
from .trim import give_back_memory

HEAVY_RACE_S = 10.0    # a race predicted to take longer than this holds a heavy slot
FIT_SHARE = 0.85       # of the event's remaining time, what a capped race's lanes may be predicted to take
RACE_BUSY = ("the server is running other visitors' long races right now; try again in a few seconds, or race "
             "fewer new tokens (max_new_tokens) with a smaller gamma or fewer drafts")


def round_kinds(record: StepRecord) -> list[str]:
    """What each token a round emitted was: the accepted drafts, then the resampled or bonus token
    (cut to what the round kept at EOS or max_new_tokens)."""
    last = "bonus" if record.n_accepted == record.gamma else "resampled"
    return (["accepted"] * record.n_accepted + [last])[: record.n_emitted]


@dataclass
class _Side:
    """A lane being decoded: its decoder, its own clock, when each of its tokens was ready, and its cap."""
    decoder: object
    cap: int
    clock_s: float = 0.0
    booked: int = 0            # forwards (target-only) or rounds (speculative) already in the cost book
    kinds: list = field(default_factory=list)
    times: list = field(default_factory=list)

    @property
    def tokens(self) -> int:
        return self.decoder.counters.tokens

    @property
    def done(self) -> bool:
        return self.decoder.finished or self.tokens >= self.cap


def _forward(side: _Side, kinds) -> float:
    """One step of `side`'s decoder, timed on its own clock; returns its seconds."""
    limits.check()  # past the event's deadline: stop between two forwards
    start = time.perf_counter()
    side.decoder.step()
    elapsed = time.perf_counter() - start
    side.clock_s += elapsed
    new = kinds(side.decoder)
    side.kinds += new
    side.times += [side.clock_s] * len(new)
    return elapsed


def _speculative_round(side: _Side) -> float:
    return _forward(side, lambda d: round_kinds(d.records[-1]))


def _target_forwards(side: _Side, until: int) -> float:
    """Target-only forwards until the side has `until` tokens (or ends); their seconds."""
    spent = 0.0
    while side.tokens < until and not side.done:
        spent += _forward(side, lambda d: ["target"])
    return spent


def _slice(spec: _Side, base: _Side, speculative_first: bool, gamma: int) -> float | None:
    """One slice under the clock; the slice's speed-up when both sides worked in it (else None)."""
    with TIMED:
        before = (spec.tokens, base.tokens)
        if spec.done:
            base_s, spec_s = _target_forwards(base, base.tokens + gamma + 1), 0.0
        elif base.done:
            base_s, spec_s = 0.0, _speculative_round(spec)
        elif speculative_first:
            spec_s = _speculative_round(spec)
            base_s = _target_forwards(base, spec.tokens)
        else:  # as many tokens as the last round emitted, then the round (the next slice catches up the rest)
            last = spec.decoder.records[-1].n_emitted if spec.decoder.records else 1
            base_s = _target_forwards(base, spec.tokens + last)
            spec_s = _speculative_round(spec)
    made = (spec.tokens - before[0], base.tokens - before[1])
    if spec_s > 0 and base_s > 0 and all(made):
        return (base_s / made[1]) / (spec_s / made[0])
    return None


def _lane(pair: ModelPair, side_name: str, side: _Side, config) -> Lane:
    decoder = side.decoder
    texts = [pair.token_text(x) for x in decoder.generated_ids]
    n = len(texts)
    drafted = side_name == SPECULATIVE  # draft forwards, from the counters (a drafter with no model runs none)
    return Lane(side_name, tuple(texts), tuple(side.kinds[:n]), tuple(side.times[:n]), decoder.counters.target_calls,
                decoder.counters.draft_calls if drafted else 0)


RACE_GPU_SECONDS = 60  # what one race asks ZeroGPU for: both sides to the end (at most 200 tokens each on the page)


@zerogpu.on_gpu(duration=RACE_GPU_SECONDS)
def run_race(settings: RunSettings, speculative_first: bool) -> Race:
    """Both sides to the end in alternating slices, the first slice's order as asked, from plain data to plain data
    (on ZeroGPU it runs in the GPU worker, decorated at import as `spaces` requires). No step card is built inside
    the timed loop (`record` off). A race stopped by the event's deadline returns what both lanes decoded."""
    pair = settings.load()
    if settings.config.gamma_auto:  # a prompt the race would refuse is refused before the rule is measured for it
        prepare_prompt(pair, settings.prompt, settings.config)
    config = auto_gamma.resolve(pair, replace(settings.config, record=False), hold=lambda: TIMED)
    try:
        return _race(pair, settings.prompt, config, speculative_first)
    finally:
        give_back_memory()  # the race's caches and activations are garbage now: their pages go back


def plan(pair: ModelPair, config, left: float | None) -> tuple[int, float | None]:
    """(the tokens a side may decode so that the race is predicted to end inside `left` seconds (None: no limit),
    the uncut race's predicted seconds; None: no costs measured yet), from the costs measured so far."""
    measured = costs.COSTS.costs(costs.pair_key(pair), costs.round_key(config))
    if measured is None:
        return config.max_new_tokens, None
    predicted = costs.predict_race_s(0, config.max_new_tokens, config.gamma, measured)  # the prompt is read already
    if left is None or predicted <= FIT_SHARE * left:
        return config.max_new_tokens, predicted
    return costs.tokens_that_fit(0, config.max_new_tokens, config.gamma, measured, FIT_SHARE * left), predicted


def _race(pair: ModelPair, prompt: str, config, speculative_first: bool) -> Race:
    quiet.before_timed_forwards(pair.device)  # outside the clock: visitors' quiet waits overlap, never queue
    try:
        with limits.said_busy(RACE_BUSY):
            spec_decoder = make_decoder(pair, prompt, config)  # the prefill runs here, before the lanes' clocks start
    except limits.EventTimeout:  # the deadline passed waiting for a slot or reading the prompt: no lane has a token
        raise limits.EventTimeout(race_not_started()) from None
    base_decoder = TargetOnlyDecoder(pair, prompt, config, prefilled=spec_decoder)
    book = (costs.pair_key(pair), costs.round_key(config))
    costs.COSTS.record(*book, prefill=(len(spec_decoder.prompt_ids), spec_decoder.prefill_s))
    cap, predicted = plan(pair, config, limits.remaining())
    if cap < 1:
        raise limits.EventTimeout(race_too_long(config, predicted))
    spec, base = _Side(spec_decoder, cap), _Side(base_decoder, cap)
    ticks, start = quiet.machine_ticks(), time.monotonic()
    slices, stopped, predicted = _lanes(pair, config, spec, base, speculative_first, predicted)
    busy = quiet.others_busy_between(ticks, quiet.machine_ticks(), time.monotonic() - start)
    _book(pair, config, spec, base)
    return Race(target_only=_lane(pair, TARGET_ONLY, base, config), speculative=_lane(pair, SPECULATIVE, spec, config),
                first=SPECULATIVE if speculative_first else TARGET_ONLY, device=str(pair.device),
                slice_speedups=tuple(r for r in slices if r is not None), others_busy_cores=busy,
                capped_to=spec.cap if spec.cap < config.max_new_tokens else 0, predicted_s=predicted,
                stopped_s=stopped, requested=config.max_new_tokens, limit_s=limits.limit_s())


def _book(pair, config, spec: _Side, base: _Side) -> None:
    """The forwards timed since the last call go into the cost book."""
    costs.COSTS.record(costs.pair_key(pair), costs.round_key(config), target_s=base.decoder.call_s[base.booked:],
                       rounds=spec.decoder.records[spec.booked:])
    spec.booked, base.booked = len(spec.decoder.records), len(base.decoder.call_s)


def _lanes(pair, config, spec: _Side, base: _Side, speculative_first: bool, predicted):
    """The slices until both sides end: (each slice's speed-up or None, the deadline that stopped them or 0, the
    prediction). With no costs measured before, or only the verify-cost curve's price of this round shape, the first
    slice measures them and the race is planned again after it."""
    measured = costs.COSTS.costs(costs.pair_key(pair), costs.round_key(config))
    slices, planned, holding = [], predicted is not None and not measured.verify_from_curve, False
    with contextlib.ExitStack() as heavy:
        try:
            while not (spec.done and base.done):
                if not planned and slices:  # the first slice measured this pair: plan the rest now
                    _book(pair, config, spec, base)
                    cap, predicted = plan(pair, config, limits.remaining())
                    spec.cap = base.cap = max(cap, spec.tokens, base.tokens)
                    planned = True
                if not holding and predicted is not None and predicted > HEAVY_RACE_S:
                    heavy.enter_context(limits.heavy_slot(limits.HEAVY_TOKENS, current_deployment().concurrency,
                                                          RACE_BUSY))
                    holding = True
                first = speculative_first == (len(slices) % 2 == 0)
                slices.append(_slice(spec, base, first, config.gamma))
        except limits.EventTimeout:  # the deadline (or the clock's wait) stopped it between two forwards
            return slices, limits.limit_s() or -1.0, predicted
    return slices, 0.0, predicted


def race_not_started() -> str:
    """Why a race the deadline stopped before its lanes started has nothing to show."""
    return (f"the race was stopped at the {limits.limit_s():g} s an event may run (SPECVIZ_EVENT_TIMEOUT_S) before "
            "its lanes started: it waited for other visitors' long prompts and races, then read its prompt; nothing "
            "was decoded: try again in a few seconds, or race a shorter prompt")


def race_too_long(config, predicted: float | None) -> str:
    """Why a race was refused before its lanes started: the knobs that cost, and what it was predicted to take."""
    return (f"a race of max_new_tokens {config.max_new_tokens} with gamma {config.gamma} and drafts {config.drafts} "
            f"is predicted to take {predicted or 0:.0f} s, more than this event has left of its "
            f"{limits.limit_s():g} s (SPECVIZ_EVENT_TIMEOUT_S); race fewer new tokens, a smaller gamma or fewer drafts")
