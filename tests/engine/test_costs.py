"""specviz.engine.serving.costs: a race's time predicted from measured per-forward costs, checked by hand."""
from __future__ import annotations

import pytest

from specviz.core.trace import StepRecord
from specviz.engine.serving.costs import CostBook, ForwardCosts, predict_race_s, tokens_that_fit

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
    assert book.costs(pair, shape) == ForwardCosts(
        prefill_token_s=0.005, target_s=0.02, verify_s=0.06, draft_s=0.01, tokens_per_round=3)
    assert book.costs(pair, ("model", 1, 8)) is None  # another gamma is another round
    book.record(pair, ("lookup", 1, 4), target_s=[0.02], rounds=[_round(2, 0.0004, 0.05)])
    assert book.costs(pair, ("lookup", 1, 4)).draft_s == pytest.approx(0.0001)  # a drafter's own time: prompt lookup's search
