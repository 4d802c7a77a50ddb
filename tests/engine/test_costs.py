"""specviz.engine.serving.costs: a race's time predicted from measured per-forward costs, checked by hand and against
seeded simulations with planted costs; the verify's cost curve measured on a target with a planted one."""
from __future__ import annotations

import contextlib
import dataclasses
import time
from types import SimpleNamespace

import numpy as np
import pytest
import torch

from specviz.core.trace import StepRecord
from specviz.engine import limits
from specviz.engine.serving.costs import (
    CostBook,
    ForwardCosts,
    VerifyCostTimer,
    measure_verify_costs,
    pair_key,
    predict_race_s,
    rounds_that_fit,
    tokens_that_fit,
)

COSTS = ForwardCosts(prefill_token_s=0.001, target_s=0.020, verify_s=0.030, draft_s=0.005, tokens_per_round=4.0)


def test_a_race_costs_its_prefill_its_target_forwards_and_its_rounds():
    # 100 x 1 ms + 200 x 20 ms + ceil(200 / 4) = 50 rounds x (16 x 5 ms + 30 ms) = 0.1 + 4.0 + 5.5
    assert predict_race_s(100, 200, 16, COSTS) == pytest.approx(9.6)


def test_a_round_that_emits_part_of_a_token_still_costs_a_whole_round():
    # ceil(10 / 4) = 3 rounds x (2 x 5 ms + 30 ms) + 10 x 20 ms
    assert predict_race_s(0, 10, 2, COSTS) == pytest.approx(0.32)


def test_the_tokens_that_fit_are_the_most_whose_race_is_predicted_in_time():
    # each token: 20 ms target-only; each 4 tokens: one round of 4 x 5 ms + 30 ms
    # 40 tokens: 0.8 + 10 x 0.05 = 1.3 s; 41 tokens: 0.82 + 11 x 0.05 = 1.37 s
    assert tokens_that_fit(0, 200, 4, COSTS, 1.3) == 40
    assert tokens_that_fit(0, 200, 4, COSTS, 1.36) == 40
    assert tokens_that_fit(0, 30, 4, COSTS, 100.0) == 30
    assert tokens_that_fit(0, 30, 4, COSTS, 0.01) == 0


def _round(emitted: int, draft_s: float, target_s: float, gamma: int = 4) -> StepRecord:
    return StepRecord(gamma=gamma, n_accepted=emitted - 1, n_examined=emitted, n_emitted=emitted,
                      draft_s=draft_s, target_s=target_s, step_s=draft_s + target_s)


def test_the_book_gives_the_median_of_what_was_measured_per_pair_and_round_shape():
    book, pair, shape = CostBook(), ("p", "cpu"), ("model", 1, 4)
    assert book.costs(pair, shape) is None  # nothing timed yet
    book.record(pair, shape, prefill=(100, 0.5), target_s=[0.01, 0.03, 0.02],
                rounds=[_round(3, 0.04, 0.05), _round(5, 0.08, 0.07), _round(1, 0.04, 0.06)])
    measured = book.costs(pair, shape)
    assert measured.host_s == pytest.approx(0.0, abs=1e-12)  # these rounds are their forwards and nothing else
    assert dataclasses.replace(measured, host_s=0.0) == ForwardCosts(
        prefill_token_s=0.005, target_s=0.02, verify_s=0.06, draft_s=0.01, tokens_per_round=3)
    assert book.costs(pair, ("model", 1, 8)) is None  # another gamma is another round
    book.record(pair, ("lookup", 1, 4), target_s=[0.02], rounds=[_round(2, 0.0004, 0.05)])
    assert book.costs(pair, ("lookup", 1, 4)).draft_s == pytest.approx(0.0001)  # a drafter's own time: prompt lookup's search


def test_a_rounds_host_work_is_booked_and_priced_for_every_round():
    book, pair, shape = CostBook(), ("p", "cpu"), ("model", 1, 2)
    hosted = [StepRecord(gamma=2, n_accepted=1, n_examined=2, n_emitted=2, draft_s=0.01, target_s=0.03, step_s=s)
              for s in (0.041, 0.043, 0.042)]                              # 1, 3 and 2 ms outside the forwards
    book.record(pair, shape, target_s=[0.02], rounds=hosted)
    measured = book.costs(pair, shape)
    assert measured.host_s == pytest.approx(0.002)
    # ceil(10 / 2) = 5 rounds x (2 x 5 ms + 30 ms + 2 ms) + 10 x 20 ms
    assert predict_race_s(0, 10, 2, measured) == pytest.approx(5 * (0.01 + 0.03 + 0.002) + 0.2)
    book.record_verify_curve(pair, [1.0, 1.1, 1.2, 1.3, 1.4, 1.5, 1.6, 1.7], 0.02)
    assert book.costs(pair, ("model", 1, 6)).host_s == pytest.approx(0.002)  # never timed: the drafter's other shapes'


# ---------------------------------------------------------------- the verify's cost curve V(n)

class _Cache:
    """Just enough of a KV cache for CachedModel: crop."""

    def crop(self, n: int) -> None:
        pass


class SleepyTarget(torch.nn.Module):
    """A target whose pass over n new positions takes `base_s` · V(n) seconds: a planted cost curve."""

    def __init__(self, planted: list[float], base_s: float):
        super().__init__()
        self.planted, self.base_s, self.passes = planted, base_s, []

    @property
    def device(self) -> torch.device:
        return torch.device("cpu")

    def get_input_embeddings(self):
        """The cache passes embeddings, not ids (`CachedModel._embed`): one zero vector per id keeps their count."""
        return lambda ids: torch.zeros(*ids.shape, 1)

    def forward(self, input_ids=None, attention_mask=None, past_key_values=None, use_cache=True, logits_to_keep=0,
                inputs_embeds=None):
        n = (input_ids if input_ids is not None else inputs_embeds).shape[1]
        self.passes.append(n)
        if n <= len(self.planted):
            time.sleep(self.base_s * self.planted[n - 1])
        return SimpleNamespace(logits=torch.zeros(1, n, 8), past_key_values=past_key_values or _Cache())


def sleepy_pair(planted: list[float], base_s: float = 0.02):
    return SimpleNamespace(name="planted", device=torch.device("cpu"), target=SleepyTarget(planted, base_s),
                           draft=torch.nn.Module(), vocab_size=8, context_window=64, examples=("a b c",),
                           encode=lambda text: [1, 2, 3])


def test_a_busy_moment_in_one_sweep_leaves_the_curve_as_planted():
    """Each sweep's passes are divided by that sweep's one-position pass: a sweep where everything ran 3 times slower,
    and one where a single pass did, move no V(n) (the median over 5 sweeps)."""
    pair = sleepy_pair([1.0, 1.5, 2.0], base_s=0.005)
    timer = VerifyCostTimer(pair, 3)
    timer.times = [[0.005, 0.015, 0.005, 0.005, 0.005], [0.0075, 0.0225, 0.0075, 0.05, 0.0075],
                   [0.010, 0.030, 0.010, 0.010, 0.010]]
    assert timer.curve() == pytest.approx([1.0, 1.5, 2.0])


def test_the_measured_curve_is_the_planted_one_and_goes_into_the_book():
    """A target that sleeps 20 ms · V(n) for a pass over n positions, V planted from 1 to 2: the medians of 2 blocks
    of 3 timed sweeps give every V(n) within 10% (sleep overshoots by well under a millisecond, 5% of 20 ms), and the
    book keeps the curve and a one-token pass of 20 ms."""
    planted = [1.0, 1.25, 1.5, 2.0]
    pair, book = sleepy_pair(planted), CostBook()
    curve = measure_verify_costs(pair, 4, blocks=2, block=3, book=book)
    assert curve[0] == 1.0 and curve == pytest.approx(planted, rel=0.1)
    assert book.verify_curve(pair_key(pair)) == pytest.approx(curve)
    assert book.costs(pair_key(pair), ("model", 1, 2)).target_s == pytest.approx(0.02, rel=0.1)
    timed = pair.target.passes[1:]  # after the context's prefill: per block one untimed sweep, then 3 timed
    assert timed == [n for _ in range(2) for _ in range(4) for n in (1, 2, 3, 4)]


def test_the_measurement_holds_the_clock_for_one_sweep_at_a_time_and_stops_at_the_deadline():
    pair, held = sleepy_pair([1.0, 1.0, 1.0], base_s=0.001), []

    @contextlib.contextmanager
    def hold():
        held.append(len(pair.target.passes))
        yield

    measure_verify_costs(pair, 3, blocks=2, block=2, hold=hold, book=CostBook())
    assert len(held) == 6 and all(b - a == 3 for a, b in zip(held, held[1:]))  # a sweep (n = 1, 2, 3) per hold
    with limits.event_deadline(0.001):
        time.sleep(0.01)
        with pytest.raises(limits.EventTimeout):
            measure_verify_costs(sleepy_pair([1.0, 1.0]), 2, book=CostBook())


def test_a_round_shape_never_timed_is_priced_from_the_curve():
    """With a one-token pass of 10 ms, V(1..5) = 1, 1.2, 1.4, 1.6, 1.8 and this drafter timed at γ 4 (5 ms a forward of
    one chain): γ 3 with one draft costs V(4) · 10 ms = 16 ms a verify and 5 ms a draft forward; γ 2 with 3 drafts
    (3 rows of 3 positions: V(9), on the line 1.8 + 4 × 0.2) 26 ms and 3 × 5 ms; each at the worst case of one token
    a round until a round of its own was timed."""
    book, pair = CostBook(), ("p", "cpu")
    book.record_verify_curve(pair, [1.0, 1.2, 1.4, 1.6, 1.8], 0.010)
    book.record(pair, ("model", 1, 4), target_s=[0.010], rounds=[_round(3, 0.020, 0.018)])
    one = book.costs(pair, ("model", 1, 3))
    assert one.verify_from_curve and one.verify_s == pytest.approx(0.016) and one.draft_s == pytest.approx(0.005)
    assert one.tokens_per_round == 1.0
    tree = book.costs(pair, ("model", 3, 2))
    assert tree.verify_s == pytest.approx(0.026) and tree.draft_s == pytest.approx(0.015)
    assert not book.costs(pair, ("model", 1, 4)).verify_from_curve  # timed: its own median
    assert book.costs(pair, ("lookup", 1, 3)).draft_s == 0.0  # prompt lookup never timed: its search taken as free
    assert CostBook().costs(pair, ("model", 1, 3)) is None  # nothing measured at all


def simulated_race_s(alpha: float, gamma: int, c: float, verify: float, target_s: float, tokens: int,
                     seed: int) -> float:
    """The oracle, written out: a race of `tokens` a side where each round keeps drafts with chance alpha until the
    first rejection (plus one token, cut at `tokens`) and costs gamma draft forwards of c · target_s and a verify of
    verify · target_s, beside `tokens` target forwards (numpy; no specviz code)."""
    rng = np.random.default_rng(seed)
    made, seconds = 0, tokens * target_s
    while made < tokens:
        kept = rng.random(gamma) < alpha
        made += int(np.cumprod(kept).sum()) + 1
        seconds += (gamma * c + verify) * target_s
    return seconds


def test_a_never_timed_shape_bounds_the_simulated_race_and_a_timed_one_predicts_it():
    """Planted c 0.1, V(5) 1.5, 10 ms a target forward, α 0.6, 400 tokens a side: priced from the curve (one token a
    round, the worst case) the prediction is at least each of 5 seeded simulated races; once the shape's rounds are
    in the book (their median tokens a round, 2) it is within 25% of their mean (the median of a round's tokens, 2,
    sits under their mean, 2.2: the book leans long)."""
    book, pair, shape = CostBook(), ("p", "cpu"), ("model", 1, 4)
    book.record_verify_curve(pair, [1.0, 1.1, 1.2, 1.35, 1.5], 0.010)
    book.record(pair, ("model", 1, 2), target_s=[0.010], rounds=[_round(2, 0.002, 0.012, gamma=2)])
    simulated = [simulated_race_s(0.6, 4, 0.1, 1.5, 0.010, 400, seed) for seed in range(5)]
    bound = predict_race_s(0, 400, 4, book.costs(pair, shape))
    assert bound >= max(simulated)
    rng = np.random.default_rng(9)
    kept = [int(np.cumprod(rng.random(4) < 0.6).sum()) for _ in range(64)]
    book.record(pair, shape, rounds=[_round(k + 1, 0.004, 0.015) for k in kept])
    assert predict_race_s(0, 400, 4, book.costs(pair, shape)) == pytest.approx(np.mean(simulated), rel=0.25)


def test_a_replay_to_a_step_costs_that_many_rounds_and_their_tokens():
    # 3 rounds of 4 tokens: 3 x (16 x 5 ms + 30 ms) + 12 x 20 ms = 0.33 + 0.24; past the end: the race's own time
    assert predict_race_s(0, 200, 16, COSTS, rounds=3) == pytest.approx(0.57)
    assert predict_race_s(0, 200, 16, COSTS, rounds=10_000) == pytest.approx(predict_race_s(0, 200, 16, COSTS))
    # each round 0.11 + 4 x 0.02 = 0.19 s: 5 fit in a second, 6 do not
    assert rounds_that_fit(200, 16, COSTS, 100_000, 1.0) == 5
    assert rounds_that_fit(200, 16, COSTS, 3, 1.0) == 3 and rounds_that_fit(200, 16, COSTS, 9, 0.1) == 0
