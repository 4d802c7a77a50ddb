"""specviz.engine.serving.replay: a link's replay planned from the cost book (planted here), cut to the rounds that
fit, refused when none does, and run whole when it fits."""
from __future__ import annotations

import pytest

from specviz.core.config import DecodeConfig
from specviz.core.trace import StepRecord
from specviz.engine import limits
from specviz.engine.serving import costs
from specviz.engine.serving.replay import plan, replay_to
from specviz.engine.serving.run import ComparedRun, RunSettings

GAMMA = 4


def planted_book(pair, round_s: float) -> costs.CostBook:
    """A book where this pair's round of γ 4 takes `round_s` (drafts half of it) and emits 2 tokens, and a target
    forward 0.1 ms: 64 samples each, so the replay's own first round cannot move the medians."""
    book = costs.CostBook()
    record = StepRecord(gamma=GAMMA, n_accepted=1, n_examined=2, n_emitted=2, draft_s=round_s / 2,
                        target_s=round_s / 2, step_s=round_s)
    book.record(costs.pair_key(pair), ("model", 1, GAMMA), target_s=[1e-4] * 64, rounds=[record] * 64)
    return book


def settings(pair, tokens: int) -> RunSettings:
    return RunSettings(pair.ref, "ROMEO.\nBut soft", DecodeConfig(gamma=GAMMA, max_new_tokens=tokens, seed=3),
                       device=str(pair.device))


def test_the_plan_prices_the_rounds_to_the_step_and_fits_what_the_event_has_left(pair, monkeypatch):
    """Rounds planted at 1 s each with 2 tokens (and 0.1 ms a target-only forward): a replay to step 40 of 60 tokens is
    30 rounds and 60 forwards, 30.006 s; with 4 s left, 0.85 × 4 = 3.4 s fits 3 rounds; to step 2, 2.0004 s, all of it."""
    monkeypatch.setattr(costs, "COSTS", planted_book(pair, 1.0))
    run = ComparedRun(settings(pair, 60))
    assert plan(run, 40, 4.0) == (3, pytest.approx(30.006))
    assert plan(run, 2, 4.0) == (2, pytest.approx(2.0004))
    assert plan(run, 40, None) == (40, pytest.approx(30.006))  # no deadline: no cut


def test_a_replay_predicted_past_the_event_is_cut_to_the_rounds_that_fit(pair, monkeypatch):
    """The same planted rounds in an event of 4 s: the replay runs the rounds the plan allowed (3, or fewer where the
    first round and the prompt took long enough to leave less), is cut, not stopped, and predicted far past 4 s."""
    monkeypatch.setattr(costs, "COSTS", planted_book(pair, 1.0))
    with limits.event_deadline(4):
        done = replay_to(settings(pair, 60), 40)
    assert done.cut and not done.refused and not done.stopped_s
    assert 1 <= done.allowed == done.reached <= 3 and 25 < done.predicted_s < 31


def test_a_replay_where_not_one_round_fits_is_refused(pair, monkeypatch):
    monkeypatch.setattr(costs, "COSTS", planted_book(pair, 10.0))
    with limits.event_deadline(4):
        done = replay_to(settings(pair, 60), 40)
    assert done.refused and done.run is None and done.reached == 0 and done.predicted_s > 4


def test_a_replay_that_fits_runs_to_its_step(pair, monkeypatch):
    monkeypatch.setattr(costs, "COSTS", planted_book(pair, 0.001))
    with limits.event_deadline(60):
        done = replay_to(settings(pair, 60), 5)
    assert not done.cut and not done.stopped_s and done.reached == 5
