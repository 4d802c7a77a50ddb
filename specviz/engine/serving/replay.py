"""A link's replay under the race's cost book: predicted before its rounds run, refused or cut to what fits, and
stopped between two rounds at the event's deadline.

A link (`core.recipe`) names every setting and a step; opening it replays the run to that step, one Step's work a
round (the speculative round and the target-only catch-up, `run.ComparedRun.step`). Its time is the race's
prediction (`costs.predict_race_s`) with the rounds cut at the link's step: after the prompt is read, the book's
per-forward costs (or, for a round shape never timed, the pair's verify-cost curve: measured first where the book
has neither) price the rounds. A replay predicted past FIT_SHARE of what the event has left is cut to the rounds
that fit (none fit: refused, the run dropped); one predicted long holds a heavy slot, as a long race does; the
first round re-plans it with its own measured costs; and a replay the machine makes slower than predicted stops
between two rounds at the deadline, keeping the rounds it ran.
"""
from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass

from .. import limits
from ..settings import current as current_deployment
from . import costs
from .race import FIT_SHARE, HEAVY_RACE_S
from .run import ComparedRun, RunSettings

REPLAY_BUSY = ("the server is replaying or racing other visitors' long runs right now; try again in a few seconds, or "
               "open a link with a smaller step, gamma, number of drafts or max_new_tokens")


@dataclass(frozen=True)
class Replay:
    """What a replay did: the run (None: refused before any round), the link's step, the rounds the plan allowed
    (the link's step unless cut), the whole replay's predicted seconds by the last plan (the rounds run, then the
    rest predicted; None: no costs to predict from), and the deadline that stopped it (0: none did)."""
    run: ComparedRun | None
    asked: int
    allowed: int
    predicted_s: float | None
    stopped_s: float = 0.0

    @property
    def reached(self) -> int:
        return len(self.run.traces) if self.run is not None else 0

    @property
    def refused(self) -> bool:
        return self.run is None

    @property
    def cut(self) -> bool:
        return self.allowed < self.asked


def plan(run: ComparedRun, steps: int, left: float | None) -> tuple[int, float | None]:
    """(the rounds of the replay, from where `run` stands, that are predicted to end inside `left` seconds (None: no
    limit), the whole replay's predicted seconds; None: nothing to predict from)."""
    config = run.config
    measured = costs.COSTS.costs(run.pair_key, costs.round_key(config)) if run.pair_key else None
    if measured is None:
        return steps, None
    done = run.spec.counters.tokens if run.spec is not None else 0
    rounds = steps - len(run.traces)
    predicted = costs.predict_race_s(0, config.max_new_tokens - done, config.gamma, measured, rounds=rounds)
    if left is None or predicted <= FIT_SHARE * left:
        return steps, predicted
    fit = costs.rounds_that_fit(config.max_new_tokens - done, config.gamma, measured, rounds, FIT_SHARE * left)
    return len(run.traces) + fit, predicted


def replay_to(settings: RunSettings, step: int) -> Replay:
    """`settings`' run replayed to `step` (or its end), within the event's deadline as the module says."""
    run = ComparedRun(settings)  # loads the pair and reads the prompt (in chunks, the deadline checked between)
    if run.pair_key is not None and costs.COSTS.costs(run.pair_key, costs.round_key(run.config)) is None:
        run.measure_verify_costs()  # a fresh server: the verify-cost curve prices the first plan
    allowed, predicted = plan(run, step, limits.remaining())
    if allowed < 1:
        return Replay(None, step, 0, predicted)
    start = time.monotonic()
    with contextlib.ExitStack() as heavy:
        if predicted is not None and predicted > HEAVY_RACE_S:
            heavy.enter_context(limits.heavy_slot(limits.HEAVY_TOKENS, current_deployment().concurrency, REPLAY_BUSY))
        try:
            while len(run.traces) < allowed and not run.finished:
                limits.check()  # past the event's deadline: stop between two rounds
                run.step()
                if len(run.traces) == 1 and step > 1:  # the first round measured this round shape: plan again
                    allowed, predicted = _replanned(run, step, allowed, predicted, time.monotonic() - start)
        except limits.EventTimeout:  # the deadline passed, or the wait for the fair clock used it up
            return Replay(run, step, allowed, predicted, stopped_s=limits.limit_s() or -1.0)
    return Replay(run, step, allowed, predicted)


def _replanned(run: ComparedRun, step: int, allowed: int, predicted: float | None,
               spent_s: float) -> tuple[int, float | None]:
    """The plan again after the first round (`spent_s` seconds): never more rounds than first allowed, never fewer than
    ran; the whole replay's prediction is the time spent and the rest's."""
    again, rest = plan(run, step, limits.remaining())
    return max(1, min(allowed, again)), (spent_s + rest) if rest is not None else predicted
