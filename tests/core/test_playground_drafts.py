"""specviz.core.playground_drafts: the multi-draft Monte Carlo agrees with the law it should have."""
from __future__ import annotations

import pytest

from specviz.core import playground_drafts as pd

P, Q = [0.5, 0.3, 0.2], [0.2, 0.2, 0.6]


@pytest.mark.parametrize("k", [1, 2, 4, 8])
def test_exact_rule_passes_and_acceptance_matches_the_closed_form(k):
    """N = 200,000 rounds: chi-square p > 1e-3; measured acceptance within 0.005 (over 5 standard errors)
    of 1 - prod TV(p_j, q), which the test recomputes by hand for k = 1, 2."""
    out = pd.simulate_drafts(P, Q, k, 200_000, "exact", seed=k)
    assert out["p_value"] > 1e-3
    assert abs(out["acceptance_rate"] - out["expected_acceptance_rate"]) < 0.005
    # by hand: k = 1, sum min(p, q) = 0.2 + 0.2 + 0.2 = 0.6; p_1 = (0.3, 0.1, 0) / 0.4 = (0.75, 0.25, 0),
    # TV(p_1, q) = (0.55 + 0.05 + 0.6) / 2 = 0.6, so k = 2 accepts with 1 - 0.4 * 0.6 = 0.76
    by_hand = {1: 0.6, 2: 0.76}
    if k in by_hand:
        assert out["expected_acceptance_rate"] == pytest.approx(by_hand[k], abs=1e-12)


def test_merged_shortcut_is_caught():
    """N = 200,000 rounds, k = 2 on (P, Q): the merged law is off by 0.04 (tests/core/test_tree.py
    enumerates it), far beyond chance at this N: p < 1e-6."""
    assert pd.simulate_drafts(P, Q, 2, 200_000, "merged", seed=1)["p_value"] < 1e-6


def test_acceptance_curve_grows_with_k_and_starts_at_one_minus_tv():
    curve = pd.acceptance_curve(P, Q)
    assert curve["acceptance"][0] == pytest.approx(curve["one_minus_tv"]) == pytest.approx(0.6)
    assert all(b >= a - 1e-12 for a, b in zip(curve["acceptance"], curve["acceptance"][1:]))


@pytest.mark.parametrize("kwargs,message", [(dict(k=0), "drafts must be"), (dict(k=9), "drafts must be"),
                                            (dict(samples=0), "samples must be"), (dict(variant="x"), "variant must be")])
def test_bad_input_names_the_setting(kwargs, message):
    with pytest.raises(ValueError, match=message):
        pd.simulate_drafts(P, Q, **{"k": 2, "samples": 100, "variant": "exact", **kwargs})
