"""specviz.metrics on hand-built step records with known answers."""
from __future__ import annotations

import pytest

from specviz.core.metrics import MIN_TIMED, metric_set, truncated_geometric
from specviz.core.trace import StepRecord


def rec(n_accepted, gamma=4, n_emitted=None, draft_s=0.004, target_s=0.01, step_s=0.02):
    examined = gamma if n_accepted == gamma else n_accepted + 1
    emitted = n_accepted + 1 if n_emitted is None else n_emitted
    return StepRecord(gamma=gamma, n_accepted=n_accepted, n_examined=examined, n_emitted=emitted,
                      draft_s=draft_s, target_s=target_s, step_s=step_s)


# Steps accepting 4, 0, 2 and 4 of 4 drafts: 10 accepted of 12 tested (4 + 1 + 3 + 4) and 16 drafted.
RUN = [rec(4), rec(0), rec(2), rec(4)]


def test_leviathan_alpha_counts_only_tested_drafts():
    assert metric_set(RUN)["acceptance_rate"] == pytest.approx(10 / 12)


def test_vllm_draft_acceptance_rate_counts_every_drafted_token():
    assert metric_set(RUN)["draft_acceptance_rate"] == pytest.approx(10 / 16)


def test_mean_acceptance_length_includes_the_bonus_or_resampled_token():
    assert metric_set(RUN)["mean_acceptance_length"] == pytest.approx((5 + 1 + 3 + 5) / 4)
    assert metric_set(RUN)["tokens_per_target_call"] == pytest.approx(14 / 4)


def test_per_position_acceptance_and_histogram():
    m = metric_set(RUN)
    assert m["per_position_acceptance"] == pytest.approx([3 / 4, 3 / 4, 2 / 4, 2 / 4])
    assert m["acceptance_length_histogram"] == [1, 0, 1, 0, 2]


def test_under_gamma_auto_each_position_and_eq1_count_the_rounds_that_drafted_that_far():
    """gamma auto drafts 1 in some rounds and 2 in others: position 2's acceptance is of the rounds that drafted it
    (not of every round), and Eq. 1 and its histogram take each round at its own length."""
    mixed = [rec(1, gamma=1), rec(0, gamma=1), rec(2, gamma=2), rec(1, gamma=2)]  # accepted 4 of tested 1+1+2+2
    m = metric_set(mixed)
    assert m["per_position_acceptance"] == pytest.approx([3 / 4, 1 / 2])
    a = 4 / 6
    assert m["expected_tokens_per_target_call"] == pytest.approx(((1 + a) * 2 + (1 + a + a * a) * 2) / 4)
    assert m["expected_acceptance_length_histogram"] == pytest.approx(
        [2 * (1 - a) + 2 * (1 - a), 2 * a + 2 * a * (1 - a), 2 * a * a])


def test_under_gamma_auto_the_predictions_price_each_round_at_its_own_length_and_the_mean_drafting():
    """Rounds of 1 and 3 drafts under gamma auto, draft forwards 1 ms and target-only steps 10 ms (c 0.1), verifies
    of 15 ms (V 1.5): the prediction takes Eq. 1 at 1 and at 3 drafts over 2 drafts a round, not Eq. 1 at the
    longest round's 3 over 3 (which put a pass over 4 positions on the page for rounds of 2 and 4)."""
    import dataclasses

    rounds = [rec(1, gamma=1, draft_s=0.001, target_s=0.015), rec(2, gamma=3, draft_s=0.003, target_s=0.015)]
    mixed = [dataclasses.replace(r, auto=True) for r in rounds] * MIN_TIMED
    m = metric_set(mixed, [0.010] * MIN_TIMED)
    a = 3 / 4                                                       # accepted 1 + 2 of tested 1 + 3
    assert m["gamma_auto"] and m["mean_gamma"] == pytest.approx(2) and m["gamma"] == 3
    tokens = ((1 + a) + (1 + a + a ** 2 + a ** 3)) / 2
    assert m["predicted_speedup_in_run"] == pytest.approx(tokens / (2 * 0.1 + 1.5))
    assert m["predicted_speedup_thm38"] == pytest.approx(tokens / (2 * 0.1 + 1))
    fixed = metric_set(rounds * MIN_TIMED, [0.010] * MIN_TIMED)    # the same rounds with no stop: a fixed gamma's
    assert not fixed["gamma_auto"]
    assert fixed["predicted_speedup_in_run"] == pytest.approx((1 + a + a ** 2 + a ** 3) / (3 * 0.1 + 1.5))


def test_system_efficiency_is_emitted_over_gamma_plus_one():
    assert metric_set(RUN)["system_efficiency"] == pytest.approx((5 + 1 + 3 + 5) / 5 / 4)
    cut = [rec(4, n_emitted=2)]  # the last step cut short by max_new_tokens
    assert metric_set(cut)["system_efficiency"] == pytest.approx(2 / 5)


def test_expected_histogram_is_the_truncated_geometric_law():
    assert truncated_geometric(0.5, 3) == pytest.approx([0.5, 0.25, 0.125, 0.125])
    assert sum(truncated_geometric(0.8, 6)) == pytest.approx(1.0)
    m = metric_set(RUN)
    assert sum(m["expected_acceptance_length_histogram"]) == pytest.approx(4)


def test_timing_metrics_wait_for_both_sides():
    assert metric_set(RUN)["speedup"] is None and metric_set(RUN)["warming_up"]
    few = metric_set(RUN, [0.01] * 3)
    assert few["speedup"] is not None and few["warming_up"]


def test_speedup_and_c_from_measured_times():
    """8 steps of 5 tokens in 20 ms against 1-token forwards of 10 ms: 250 vs 100 tokens/s."""
    records = [rec(4)] * MIN_TIMED
    m = metric_set(records, [0.010] * MIN_TIMED)
    assert not m["warming_up"]
    assert m["tokens_per_s_speculative"] == pytest.approx(250) and m["tokens_per_s_target_only"] == pytest.approx(100)
    assert m["speedup"] == pytest.approx(2.5)
    assert m["cost_ratio_c"] == pytest.approx(0.001 / 0.010)  # 4 ms for 4 draft forwards vs 10 ms
    assert m["speedup_stderr"] == pytest.approx(0.0)  # identical samples: no spread
    assert 1 <= m["best_gamma"] <= 16


def test_an_empty_run_has_zeros_not_errors():
    m = metric_set([])
    assert m["steps"] == 0 and m["acceptance_rate"] == 0 and m["per_position_acceptance"] == []


def test_acceptance_by_depth_and_by_sibling_rank_for_trees():
    from specviz.core.trace import StepRecord as R

    recs = [R(gamma=2, n_accepted=2, n_examined=2, n_emitted=3, draft_s=0, target_s=0, step_s=1, drafts=3, level_tries=(2, 1)),
            R(gamma=2, n_accepted=0, n_examined=1, n_emitted=1, draft_s=0, target_s=0, step_s=1, drafts=3, level_tries=(3,)),
            R(gamma=2, n_accepted=1, n_examined=2, n_emitted=2, draft_s=0, target_s=0, step_s=1, drafts=3, level_tries=(1, 2))]
    m = metric_set(recs)
    # depth 0: examined 3 times, accepted twice; depth 1: examined twice, accepted once
    assert m["acceptance_by_depth"] == [2 / 3, 1 / 2]
    # rank 0: 5 tries (2+1+1... per level: 2,1,3,1,2 -> rank 0 in all 5), accepted at the levels with one try: 2
    # rank 1: levels with >= 2 tries: 3, accepted where it was the last of an accepted level: (2,_) -> 1
    # rank 2: one try (the level of 3, all rejected)
    assert m["tries_by_rank"] == [5, 3, 1]
    assert m["acceptance_by_rank"] == [2 / 5, 1 / 3, 0.0]
    assert m["drafts"] == 3


def test_drafts_after_an_accepted_eos_leave_the_drafted_count():
    # a round that accepted an EOS as its 2nd draft: 2 accepted, 2 tested, 2 drafts never output
    cut = StepRecord(gamma=4, n_accepted=2, n_examined=2, n_emitted=2, draft_s=0.004, target_s=0.01, step_s=0.02,
                     after_eos=2)
    m = metric_set([rec(4), cut])
    assert m["draft_acceptance_rate"] == 6 / 6 and m["acceptance_rate"] == 6 / 6
