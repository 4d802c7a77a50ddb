"""specviz.engine.serving.replay: a link's replay planned from the cost book (planted here), cut to the rounds that
fit, refused when none does, and run whole when it fits."""
from __future__ import annotations

from specviz.core.config import DecodeConfig
from specviz.core.trace import StepRecord
from specviz.engine import limits
from specviz.engine.serving import costs
from specviz.engine.serving.replay import replay_to
from specviz.engine.serving.run import RunSettings

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


def test_a_replay_predicted_past_the_event_is_cut_to_the_rounds_that_fit(pair, monkeypatch):
    """Rounds planted at 1 s each (2 tokens and 0.2 ms of target-only forwards beside them): 60 tokens are 30 rounds,
    about 30 s (after the first round: its own time and the other rounds'); in an event of 4 s, 0.85 of what is left
    fits 3 rounds, and the replay runs exactly those 3."""
    monkeypatch.setattr(costs, "COSTS", planted_book(pair, 1.0))
    with limits.event_deadline(4):
        done = replay_to(settings(pair, 60), 40)
    assert done.cut and not done.refused and not done.stopped_s
    assert done.allowed == done.reached == 3 and 25 < done.predicted_s < 31


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
