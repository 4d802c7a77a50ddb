"""specviz.engine.serving.race: both sides decoded to the end, each alone, with the time each token was ready."""
from __future__ import annotations

import threading

from specviz.core.config import DecodeConfig
from specviz.core.trace import StepRecord
from specviz.engine.decoding.decoders import SpeculativeDecoder, TargetOnlyDecoder
from specviz.engine.models.presets import pair_ref
from specviz.engine.serving.race import SPECULATIVE, TARGET_ONLY, round_kinds, run_race
from specviz.engine.serving.run import TIMED, RunSettings

PROMPT = "KING.\nNow is the time"


def settings(**config) -> RunSettings:
    return RunSettings(pair=pair_ref("shakespeare"), prompt=PROMPT,
                       config=DecodeConfig(**{"gamma": 4, "max_new_tokens": 40, "seed": 5, **config}), device="cpu")


def record(gamma, accepted, emitted) -> StepRecord:
    return StepRecord(gamma=gamma, n_accepted=accepted, n_examined=min(accepted + 1, gamma), n_emitted=emitted,
                      draft_s=0.0, target_s=0.0, step_s=0.0)


def test_a_round_that_keeps_every_draft_ends_in_a_bonus_token():
    assert round_kinds(record(3, 3, 4)) == ["accepted", "accepted", "accepted", "bonus"]


def test_a_round_cut_by_a_rejection_ends_in_a_resampled_token():
    assert round_kinds(record(4, 1, 2)) == ["accepted", "resampled"]


def test_a_round_cut_short_by_eos_keeps_only_what_it_emitted():
    assert round_kinds(record(4, 3, 2)) == ["accepted", "accepted"]


def test_each_lane_writes_what_its_decoder_writes_alone(pair):
    race = run_race(settings(), speculative_first=True)
    spec = SpeculativeDecoder(pair, PROMPT, DecodeConfig(gamma=4, max_new_tokens=40, seed=5, record=False))
    spec.run()
    base = TargetOnlyDecoder(pair, PROMPT, DecodeConfig(gamma=4, max_new_tokens=40, seed=5))
    base.run()
    assert "".join(race.speculative.texts) == "".join(pair.token_text(x) for x in spec.generated_ids)
    assert "".join(race.target_only.texts) == "".join(pair.token_text(x) for x in base.generated_ids)
    assert race.speculative.target_passes == spec.counters.target_calls
    assert race.speculative.kinds.count("accepted") == sum(min(r.n_accepted, r.n_emitted) for r in spec.records)
    assert race.target_only.target_passes == len(race.target_only.texts) == 40


def test_times_rise_and_a_rounds_tokens_arrive_together(pair):
    race = run_race(settings(), speculative_first=False)
    for lane in (race.target_only, race.speculative):
        assert len(lane.times_s) == len(lane.texts) == len(lane.kinds)
        assert all(0 < a <= b for a, b in zip(lane.times_s, lane.times_s[1:]))
    assert len(set(race.target_only.times_s)) == len(race.target_only.times_s)  # one token per forward
    assert len(set(race.speculative.times_s)) == race.speculative.target_passes  # one time per round
    lane = race.speculative
    ends = [i for i, k in enumerate(lane.kinds) if k in ("resampled", "bonus")]
    last_round = lane.times_s.index(lane.total_s)  # max_new_tokens may cut the last round before its correction
    assert len([i for i in ends if i < last_round]) == lane.target_passes - 1  # every earlier round ends in one


def test_the_side_asked_to_go_first_goes_first(pair):
    assert run_race(settings(max_new_tokens=5), speculative_first=True).first == SPECULATIVE
    assert run_race(settings(max_new_tokens=5), speculative_first=False).first == TARGET_ONLY


def test_at_temperature_zero_both_lanes_write_the_same_text(pair):
    race = run_race(settings(temperature=0.0), speculative_first=True)
    assert race.speculative.texts == race.target_only.texts


def test_no_side_runs_while_another_timed_stretch_holds_the_machine(pair):
    done = threading.Event()
    with TIMED:  # a Step of another visitor, timing its forwards
        worker = threading.Thread(target=lambda: (run_race(settings(max_new_tokens=3), True), done.set()))
        worker.start()
        worker.join(timeout=1.0)
        assert not done.is_set()
    worker.join(timeout=60)
    assert done.is_set()

