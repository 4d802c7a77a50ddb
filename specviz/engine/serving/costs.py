"""What a race will cost before it runs: the pair's measured per-forward times, and a prediction from them.

Every Step and every race slice leaves its forwards' wall times in a process-wide book (per pair and
device; a speculative round's costs also per drafter, drafts and gamma, which change them). A race's time is
then, with N = max_new_tokens, P the prompt's tokens and the measured costs

    prefill  P · t_prefill                  (both sides share one prefill)
    target-only  N · t_target               (one forward a token)
    speculative  ⌈N / m⌉ · (γ · t_draft + t_verify)

where m is the tokens a round emitted on average (1, the worst case, until a round was measured), t_draft
one draft forward of all k chains at once (a drafter with no model: its search) and t_verify one target forward over γ + 1
positions (Leviathan, Kalman and Matias, "Fast Inference from Transformers via Speculative Decoding",
Sec. 3.4: a round costs γ draft forwards and one target forward). A race predicted past its deadline is
capped to the tokens that fit, and one predicted to be long takes a heavy slot.
"""
from __future__ import annotations

import math
import statistics
import threading
from collections import deque
from dataclasses import dataclass

SAMPLES = 64  # the most recent measurements kept per quantity: the machine's speed now, not at start-up


@dataclass(frozen=True)
class ForwardCosts:
    """Seconds per forward, as measured on this machine (see the module's formula)."""
    prefill_token_s: float     # reading the prompt, per prompt token
    target_s: float            # one target-only forward (one token)
    verify_s: float            # one target forward over gamma + 1 positions
    draft_s: float             # one draft forward of every chain at once (a drafter with no model: its search)
    tokens_per_round: float    # tokens a speculative round emitted on average (>= 1)


def predict_race_s(prompt_tokens: int, max_new_tokens: int, gamma: int, costs: ForwardCosts) -> float:
    """Seconds a race of `max_new_tokens` a side takes: the prompt read once, then both lanes' forwards."""
    rounds = math.ceil(max_new_tokens / max(costs.tokens_per_round, 1.0))
    return (prompt_tokens * costs.prefill_token_s + max_new_tokens * costs.target_s
            + rounds * (gamma * costs.draft_s + costs.verify_s))


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


def _median(samples) -> float | None:
    return statistics.median(samples) if samples else None


class CostBook:
    """The per-forward times measured in this process, per pair (and per round shape for speculative rounds)."""

    def __init__(self):
        self._samples: dict[tuple, deque] = {}
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

    def costs(self, pair_key: tuple, round_key: tuple) -> ForwardCosts | None:
        """The medians measured so far, or None while a target forward or a round of this shape was never timed
        (a missing prefill counts as free: it is measured by the race's own prefill before the lanes start). The round's
        drafting time is what this drafter measured (round_key names it): a drafter with no model costs its search."""
        target = self._get((*pair_key, "target"))
        verify = self._get((*pair_key, *round_key, "verify"))
        if target is None or verify is None:
            return None
        emitted = self._get((*pair_key, *round_key, "emitted"))
        return ForwardCosts(prefill_token_s=self._get((*pair_key, "prefill")) or 0.0, target_s=target,
                            verify_s=verify, draft_s=self._get((*pair_key, *round_key, "draft")) or 0.0,
                            tokens_per_round=max(emitted or 1.0, 1.0))


COSTS = CostBook()  # process-wide: forward times of the loaded pairs, no visitor's data


def pair_key(pair) -> tuple:
    return (pair.name, str(pair.device))


def round_key(config) -> tuple:
    return (config.drafter, config.drafts, config.gamma)
