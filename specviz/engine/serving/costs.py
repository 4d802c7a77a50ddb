"""What a race will cost before it runs: the pair's measured per-forward times, and a prediction from them.

Every Step and every race slice leaves its forwards' wall times in a process-wide book (per pair and
device; a speculative round's costs also per drafter, drafts and gamma, which change them). A race's time is
then, with N = max_new_tokens, P the prompt's tokens and the measured costs

    prefill  P · t_prefill                  (both sides share one prefill)
    target-only  N · t_target               (one forward a token)
    speculative  ⌈N / m⌉ · (γ · t_draft + t_verify + t_host)

where m is the tokens a round emitted on average (1, the worst case, until a round was measured), t_draft
one draft forward of all k chains at once (a drafter with no model: its search) and t_verify one target forward over γ + 1
positions (Leviathan, Kalman and Matias, "Fast Inference from Transformers via Speculative Decoding",
Sec. 3.4: a round costs γ draft forwards and one target forward), t_host the round's time outside its forwards
(warping, the accept test, the trace: `core.round_host`; a target-only step's own is inside t_target). A race predicted past its deadline is
capped to the tokens that fit, and one predicted to be long takes a heavy slot. A link's replay to step s is
the same sum with the rounds cut at s (`predict_race_s(..., rounds=s)`).

The verify's cost curve. A round shape never timed yet still has a price: t_verify = V(n) · t_target, where
V(n) is the target's measured cost of a pass over n positions relative to one (`core.verify_cost`), n the round's
positions, measured once per pair and device by `measure_verify_costs` (back-to-back timed forwards, medians, as
the bench times its calls) and kept in the book beside the per-forward times (`CostBook.verify_curve`).
"""
from __future__ import annotations

import contextlib
import math
import statistics
import threading
import time
from collections import deque
from dataclasses import dataclass

import torch

from ...core.verify_cost import check_verify_costs, verify_cost_at
from .. import limits
from ..caches.cache import CachedModel
from ..decoding.feature_draft import reads_features

SAMPLES = 64  # the most recent measurements kept per quantity: the machine's speed now, not at start-up


@dataclass(frozen=True)
class ForwardCosts:
    """Seconds per forward, as measured on this machine (see the module's formula)."""
    prefill_token_s: float     # reading the prompt, per prompt token
    target_s: float            # one target-only forward (one token)
    verify_s: float            # one target forward over gamma + 1 positions
    draft_s: float             # one draft forward of every chain at once (a drafter with no model: its search)
    tokens_per_round: float    # tokens a speculative round emitted on average (>= 1)
    verify_from_curve: bool = False  # verify_s is V(n) · target_s: this round shape was never timed
    host_s: float = 0.0        # a round's time outside its forwards (core.round_host)


def predict_race_s(prompt_tokens: int, max_new_tokens: int, gamma: int, costs: ForwardCosts,
                   rounds: int | None = None) -> float:
    """Seconds a race of `max_new_tokens` a side takes: the prompt read once, then both lanes' forwards. With
    `rounds`: the speculative side stops after that many rounds and target-only at the tokens they emitted (a
    link's replay to its step)."""
    per_round = max(costs.tokens_per_round, 1.0)
    needed = math.ceil(max_new_tokens / per_round)
    rounds = needed if rounds is None else min(rounds, needed)
    tokens = min(max_new_tokens, rounds * per_round)
    return (prompt_tokens * costs.prefill_token_s + tokens * costs.target_s
            + rounds * (gamma * costs.draft_s + costs.verify_s + costs.host_s))


def tokens_that_fit(prompt_tokens: int, max_new_tokens: int, gamma: int, costs: ForwardCosts, seconds: float) -> int:
    """The most new tokens a side (at most `max_new_tokens`) whose race is predicted to take `seconds` or less
    (0: not even one)."""
    low, high = 0, max_new_tokens
    while low < high:  # the prediction grows with the tokens: the largest that fits, by bisection
        mid = (low + high + 1) // 2
        if predict_race_s(prompt_tokens, mid, gamma, costs) <= seconds:
            low = mid
        else:
            high = mid - 1
    return low


def rounds_that_fit(max_new_tokens: int, gamma: int, costs: ForwardCosts, rounds: int, seconds: float) -> int:
    """The most rounds (at most `rounds`) of a replay predicted to take `seconds` or less (0: not even one)."""
    low, high = 0, rounds
    while low < high:  # the prediction grows with the rounds: the largest that fits, by bisection
        mid = (low + high + 1) // 2
        if predict_race_s(0, max_new_tokens, gamma, costs, rounds=mid) <= seconds:
            low = mid
        else:
            high = mid - 1
    return low


def _median(samples) -> float | None:
    return statistics.median(samples) if samples else None


class CostBook:
    """The per-forward times measured in this process, per pair (and per round shape for speculative rounds)."""

    def __init__(self):
        self._samples: dict[tuple, deque] = {}
        self._curves: dict[tuple, tuple[list[float], float]] = {}  # per pair: (V(1..n), a one-position pass's seconds)
        self._lock = threading.Lock()

    def _add(self, key: tuple, values) -> None:
        with self._lock:
            self._samples.setdefault(key, deque(maxlen=SAMPLES)).extend(values)

    def _get(self, key: tuple) -> float | None:
        with self._lock:
            return _median(list(self._samples.get(key, ())))

    def record(self, pair_key: tuple, round_key: tuple, *, prefill: tuple[int, float] | None = None,
               target_s=(), rounds=()) -> None:
        """Measurements: a prefill as (tokens, seconds), target-only forward times, and speculative rounds'
        StepRecords (round_key: drafter, drafts, gamma)."""
        if prefill and prefill[0] > 0 and prefill[1] > 0:
            self._add((*pair_key, "prefill"), [prefill[1] / prefill[0]])
        self._add((*pair_key, "target"), list(target_s))
        rounds = [r for r in rounds if r.gamma > 0]
        self._add((*pair_key, *round_key, "verify"), [r.target_s for r in rounds])
        self._add((*pair_key, *round_key, "draft"), [r.draft_s / r.gamma for r in rounds])
        self._add((*pair_key, *round_key, "emitted"), [r.n_emitted for r in rounds])
        self._add((*pair_key, *round_key, "host"), [max(0.0, r.step_s - r.draft_s - r.target_s) for r in rounds])

    def record_verify_curve(self, pair_key: tuple, curve: list[float], one_pass_s: float) -> None:
        """A measured curve [V(1) = 1, V(2), ...] and the seconds of a target pass over one position."""
        with self._lock:
            self._curves[pair_key] = (check_verify_costs(curve), one_pass_s)

    def verify_curve(self, pair_key: tuple) -> list[float] | None:
        """[V(1) = 1, V(2), ...] measured for this pair and device, or None while it never was."""
        with self._lock:
            measured = self._curves.get(pair_key)
        return None if measured is None else list(measured[0])

    def one_pass_s(self, pair_key: tuple) -> float | None:
        """The seconds of a target pass over one position timed with the pair's curve, or None while it never was."""
        with self._lock:
            measured = self._curves.get(pair_key)
        return None if measured is None else measured[1]

    def costs(self, pair_key: tuple, round_key: tuple) -> ForwardCosts | None:
        """The medians measured so far, or None while a target forward or a round of this shape was never timed
        and the pair's verify curve was never measured (a missing prefill counts as free: it is measured by the race's
        own prefill before the lanes start). The round's drafting time is what this drafter measured (round_key names
        it: drafter, drafts, gamma): a drafter with no model costs its search. A shape never timed is priced from the
        curve: its verify V(k (γ + 1)) target forwards, its draft forward what this drafter's forwards measured at other
        shapes (per chain, times k), its tokens a round 1 (the worst case)."""
        with self._lock:
            measured = self._curves.get(pair_key)
        target = self._get((*pair_key, "target")) or (measured[1] if measured else None)
        verify = self._get((*pair_key, *round_key, "verify"))
        estimated = verify is None and target is not None and measured is not None
        if estimated:
            drafter, drafts, gamma = round_key
            verify = target * verify_cost_at(measured[0], drafts * (gamma + 1))
        if target is None or verify is None:
            return None
        emitted = self._get((*pair_key, *round_key, "emitted"))
        draft = self._get((*pair_key, *round_key, "draft"))
        if draft is None:
            draft = self._draft_per_chain(pair_key, round_key[0]) * round_key[1]
        host = self._get((*pair_key, *round_key, "host"))
        if host is None:  # a shape never timed: what this drafter's rounds spent outside their forwards elsewhere
            host = self._per_shape(pair_key, round_key[0], "host", lambda key: 1.0)
        return ForwardCosts(prefill_token_s=self._get((*pair_key, "prefill")) or 0.0, target_s=target,
                            verify_s=verify, draft_s=draft, tokens_per_round=max(emitted or 1.0, 1.0),
                            verify_from_curve=estimated, host_s=host)

    def _draft_per_chain(self, pair_key: tuple, drafter: str) -> float:
        """One draft forward of one chain, from this drafter's rounds at every shape timed (0: none were)."""
        return self._per_shape(pair_key, drafter, "draft", lambda key: key[-3])

    def _per_shape(self, pair_key: tuple, drafter: str, quantity: str, per) -> float:
        """The median of a quantity over this drafter's rounds at every shape timed, each sample divided by
        per(its key) (0: none were)."""
        with self._lock:
            values = [s / per(key) for key, samples in self._samples.items()
                      if key[:-4] == pair_key and key[-4] == drafter and key[-1] == quantity for s in samples]
        return statistics.median(values) if values else 0.0


COSTS = CostBook()  # process-wide: forward times of the loaded pairs, no visitor's data


def pair_key(pair) -> tuple:
    return (pair.name, str(pair.device))


def round_key(config) -> tuple:
    return (config.drafter, config.drafts, config.gamma)


VERIFY_BLOCK = 5        # timed sweeps over n = 1..n_max in one block (one untimed sweep first)
VERIFY_CONTEXT = 128    # tokens of context the passes run after: a prompt's worth, as in decoding
APP_VERIFY_N = 9        # the page measures V(1..9): γ 1..8 priced from measurements, larger γ extrapolated
APP_VERIFY_SWEEPS = 4   # ... in 4 timed sweeps (about 2 s on smollm2-local's target, 0.2 s on the bundled one)


def _timed_context(pair, n_max: int) -> list[int]:
    """The pair's first example prompt repeated to VERIFY_CONTEXT tokens, within its context window."""
    ids = pair.encode((pair.examples or ("The",))[0]) or [0]
    room = max(1, min(VERIFY_CONTEXT, (pair.context_window or VERIFY_CONTEXT + n_max) - n_max - 1))
    return (ids * (room // len(ids) + 1))[:room]


class VerifyCostTimer:
    """Target passes over n = 1..n_max new positions after a context, each cropped back, timed in sweeps: one sweep is
    a pass over 1, 2, ..., n_max positions back to back (the same weights each time, hot in the cache as in decoding),
    and V(n) is the median over sweeps of that sweep's t(n) / t(1), so that a moment the machine is busy, or drifting
    speed, hits a sweep's n alike instead of one n's every pass. `block(size)` runs one untimed sweep then `size` timed
    ones, so that a caller can spread blocks over a run (the bench's CallTimer does the same with its calls). The target
    keeps its hidden states where the pair's draft reads them, as in decoding; every pass keeps all n positions'
    logits, as a verify does."""

    def __init__(self, pair, n_max: int, context: list[int] | None = None):
        if isinstance(n_max, bool) or not isinstance(n_max, int) or n_max < 2:
            raise ValueError(f"n_max must be a whole number >= 2 (V(1) and at least V(2)), not {n_max!r}")
        self.n_max = n_max
        self.context = context or _timed_context(pair, n_max)
        self.model = CachedModel(pair.target, pair.vocab_size, keep_features=reads_features(pair.draft))
        self.model.forward(self.context)
        self.times: list[list[float]] = [[] for _ in range(n_max)]  # [n - 1][sweep]: seconds of a pass over n
        self.done = 0

    def _pass(self, n: int, shift: int) -> float:
        context = self.context
        new = [context[(shift + k) % len(context)] for k in range(n)]
        start = time.perf_counter()
        out = self.model.forward(new)  # [n, V]
        if out.device.type == "cuda":
            torch.cuda.synchronize(out.device)
        elapsed = time.perf_counter() - start
        self.model.crop_to(len(context))
        return elapsed

    def block(self, size: int = VERIFY_BLOCK, hold=contextlib.nullcontext) -> None:
        """One untimed sweep, then `size` timed ones, `hold()` entered around each sweep (a fair clock is held for one
        sweep's passes, about a round's work, never for the block); the event's deadline is checked between sweeps."""
        for sweep in range(-1, size):
            limits.check()
            with hold():
                seconds = [self._pass(n, self.done + sweep) for n in range(1, self.n_max + 1)]
            if sweep >= 0:
                for n, elapsed in enumerate(seconds):
                    self.times[n].append(elapsed)
        self.done += size

    def seconds(self) -> list[float]:
        """The median seconds of a pass over n = 1..n_max positions."""
        return [statistics.median(t) for t in self.times]

    def curve(self) -> list[float]:
        """[V(1) = 1, V(2), ..., V(n_max)]: for each n the median over sweeps of t(n) / t(1) within the sweep."""
        ones = self.times[0]
        return check_verify_costs([1.0] + [statistics.median(t / one for t, one in zip(times, ones))
                                           for times in self.times[1:]])


def measure_verify_costs(pair, n_max: int, *, blocks: int = 3, block: int = VERIFY_BLOCK,
                         hold=contextlib.nullcontext, book: CostBook | None = None) -> list[float]:
    """[V(1) = 1.0, V(2), ..., V(n_max)] for `pair` on its device: the medians of `blocks` blocks of `block` timed sweeps
    of target passes over 1..n_max positions (VerifyCostTimer). `hold()` is entered around each sweep (the app passes
    the fair clock, so no other visitor's forwards run inside one); the event's deadline is checked between sweeps. The
    curve and a one-position pass's seconds go into `book` (the process's COSTS by default), where a race's and a
    link's predictions read them."""
    timer = VerifyCostTimer(pair, n_max)
    for _ in range(blocks):
        timer.block(block, hold)
    curve = timer.curve()
    (COSTS if book is None else book).record_verify_curve(pair_key(pair), curve, timer.seconds()[0])
    return curve


_MEASURING = threading.Lock()  # one measurement at a time: two visitors' first Steps measure a pair once


def pair_verify_costs(pair, n_max: int = APP_VERIFY_N, hold=contextlib.nullcontext) -> list[float]:
    """The pair's verify curve from the book, measured first if the book has none (or a shorter one)."""
    with _MEASURING:
        curve = COSTS.verify_curve(pair_key(pair))
        if curve is None or len(curve) < n_max:
            curve = measure_verify_costs(pair, n_max, blocks=1, block=APP_VERIFY_SWEEPS, hold=hold)
    return curve
