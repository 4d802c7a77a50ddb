"""The round's host work as a line against γ: a planted line comes back, noise that would make it fall is
read as flat, and it never prices a round below nothing."""
from __future__ import annotations

import numpy as np
import pytest

from specviz.core.round_host import as_whatif, line_at, line_without, round_line


def test_a_planted_line_comes_back_weighted_by_the_rounds():
    gammas, rounds = [1, 2, 3, 4, 8], [300, 230, 180, 160, 116]
    host = [0.5e-3 + 0.05e-3 * g for g in gammas]
    intercept, slope = round_line(gammas, host, rounds)
    assert (intercept, slope) == pytest.approx((0.5e-3, 0.05e-3))


def test_it_is_weighted_least_squares():
    gammas, host, rounds = [1, 2, 5], [0.6e-3, 0.62e-3, 0.9e-3], [300, 10, 100]
    slope, intercept = np.polyfit(gammas, host, 1, w=np.sqrt(rounds))  # numpy's own fit, weights on residuals
    assert round_line(gammas, host, rounds) == pytest.approx((intercept, slope))


def test_one_gamma_or_a_falling_line_is_flat_at_the_weighted_mean():
    assert round_line([4], [0.7e-3], [50]) == pytest.approx((0.7e-3, 0.0))
    intercept, slope = round_line([1, 8], [0.9e-3, 0.5e-3], [100, 300])
    assert slope == 0.0 and intercept == pytest.approx((0.9e-3 * 100 + 0.5e-3 * 300) / 400)


def test_the_line_never_goes_below_zero():
    assert line_at((-0.2, 0.1), 1) == 0.0 and line_at((-0.2, 0.1), 4) == pytest.approx(0.2)


def test_bad_times_are_refused():
    with pytest.raises(ValueError, match="seconds >= 0"):
        round_line([1, 2], [0.1, -0.1], [5, 5])
    with pytest.raises(ValueError, match="at least one gamma"):
        round_line([1], [0.1], [0])


def test_a_reports_round_cost_is_read_in_target_only_steps():
    cost = {"host_ms_line": [0.5, 0.05], "target_only_step_ms": 2.5, "forward_share": 0.96, "max_new_tokens": 48}
    assert as_whatif(cost) == {"host_cost": pytest.approx([0.2, 0.02]), "forward_share": 0.96, "max_new_tokens": 48}
    assert as_whatif({**cost, "draft_ms_line": [1.0, 0.5]})["drafting"] == pytest.approx([0.4, 0.2])
    assert as_whatif(None) == {}


def test_an_intercept_fitted_below_zero_is_the_line_through_the_origin():
    """0.1, 0.5, 1.5 ms at γ 1, 2, 4 fit -0.40 + 0.47 γ: below 0 at γ 0, so the weighted line through the origin,
    Σ g h / Σ g² = (0.1 + 1.0 + 6.0) / 21."""
    assert round_line([1, 2, 4], [0.1, 0.5, 1.5], [1, 1, 1]) == pytest.approx((0.0, 7.1 / 21))


def test_drafting_measured_at_one_gamma_is_proportional_to_it():
    """One γ's 3 ms of drafting at γ 3: 1 ms a drafted token at every γ (flat would make c fall as 1/γ)."""
    assert round_line([3], [3e-3], [40], alone="proportional") == pytest.approx((0.0, 1e-3))
    assert round_line([3], [3e-3], [40]) == pytest.approx((3e-3, 0.0))


def test_a_gammas_own_prediction_leaves_its_point_out():
    gammas, host, rounds = [1, 2, 3, 8], [0.5, 0.6, 0.7, 2.0], [10, 10, 10, 10]
    assert line_without(gammas, host, rounds, 8) == pytest.approx(round_line([1, 2, 3], [0.5, 0.6, 0.7], [10] * 3))
    assert line_without([1, 2], [0.5, 0.6], [10, 10], 2) == round_line([1, 2], [0.5, 0.6], [10, 10])  # one left: all
