"""Acceptance under each tool's definition, pooled against per request, on hand-built rounds."""
from __future__ import annotations

import pytest

from specviz.core import conventions
from specviz.core.trace import StepRecord


def rounds(*accepted, gamma=4):
    return [StepRecord(gamma=gamma, n_accepted=a, n_examined=gamma if a == gamma else a + 1, n_emitted=a + 1,
                       draft_s=0.0, target_s=0.0, step_s=0.0) for a in accepted]


def test_each_convention_from_one_set_of_counts():
    # 10 rounds of 4 drafts, 20 accepted, 28 tested
    f = conventions.figures_by_convention(rounds=10, gamma=4, accepted=20, tested=28)
    assert f["vllm_draft_acceptance_rate"] == 0.5 and f["llamacpp_draft_acceptance_rate"] == 0.5
    assert f["vllm_mean_acceptance_length"] == 3.0 == f["sglang_spec_accept_length"]
    assert f["accepted_per_round_bonus_out"] == 2.0
    assert f["leviathan_alpha"] == pytest.approx(20 / 28)
    a = 20 / 28
    assert f["leviathan_expected_tokens_eq1"] == pytest.approx((1 - a ** 5) / (1 - a))


def test_pooled_and_per_request_can_rank_two_configurations_oppositely():
    # A: one long easy request (20 rounds all accepted) and three short ones that reject at once;
    # B: four middling requests of 5 rounds accepting 2 each
    a = [rounds(*[4] * 20), rounds(0), rounds(0), rounds(0)]
    b = [rounds(2, 2, 2, 2, 2) for _ in range(4)]
    forms = {"A": conventions.pooled_and_per_request(a), "B": conventions.pooled_and_per_request(b)}
    assert forms["A"]["acceptance_length_pooled"] == pytest.approx(1 + 80 / 23)
    assert forms["A"]["acceptance_length_mean_over_requests"] == pytest.approx((5 + 1 + 1 + 1) / 4)
    sentence = conventions.ranking_disagreement(forms, "acceptance_length_pooled",
                                                "acceptance_length_mean_over_requests", "acceptance length")
    assert "rank these differently" in sentence and sentence.index("A (") < sentence.index("B (")
    same = {"A": forms["A"], "C": conventions.pooled_and_per_request([rounds(0)])}
    assert conventions.ranking_disagreement(same, "acceptance_length_pooled",
                                            "acceptance_length_mean_over_requests", "acceptance length") == ""


def test_per_request_histogram_bins_from_one():
    h = conventions.acceptance_length_histogram([1.0, 1.1, 2.0, 4.9], width=1.0)
    assert h == {"edges": [1.0, 2.0, 3.0, 4.0, 5.0], "counts": [2, 1, 0, 1]}
