"""core.verify_cost.straightened: the verify curve a stopping rule prices further positions by, against planted
lines, planted noise and a planted jump."""
from __future__ import annotations

import numpy as np
import pytest

from specviz.core.verify_cost import straightened


def steps(curve):
    return np.diff(np.asarray(curve[1:]))


def test_a_straight_curve_and_its_jump_at_two_positions_are_kept():
    curve = [1.0, 1.5, 1.53, 1.56, 1.59]  # a jump to V(2), then 0.03 a position
    assert straightened(curve) == pytest.approx(curve)


def test_noisy_timings_give_every_step_the_planted_slope():
    """A planted V(n) = 1.02 + 0.03 (n - 2), n = 2..9, each point moved by seeded noise of sd 0.03 (a busy CPU's
    ratio of two timings): the raw steps run from below 0 to twice the slope; the line's steps are all one number,
    within 0.015 of 0.03 (three standard errors of a slope fitted to 8 points at that noise: 0.0046 each)."""
    rng = np.random.default_rng(3)
    ns = np.arange(2, 10)
    planted = 1.02 + 0.03 * (ns - 2)
    curve = [1.0, *(planted + rng.normal(0, 0.03, len(ns)))]
    raw, fitted = steps(curve), steps(straightened(curve))
    assert raw.min() < 0 and raw.max() > 0.06, raw  # what a rule reading the raw curve would price
    assert np.ptp(fitted) < 1e-12 and fitted[0] == pytest.approx(0.03, abs=0.015)


def test_a_line_that_starts_below_one_pass_is_raised_keeping_its_slope():
    curve = [1.0, 0.97, 1.01, 1.05, 1.09]  # a line of slope 0.04 from V(2) = 0.97
    assert straightened(curve) == pytest.approx([1.0, 1.0, 1.04, 1.08, 1.12])


def test_a_falling_curve_is_noise_flat_and_never_below_one_pass():
    fitted = straightened([1.0, 0.97, 0.99, 0.95, 0.96])
    assert fitted[0] == 1.0 and all(v >= 1.0 for v in fitted) and np.ptp(steps(fitted)) < 1e-12
    assert steps(fitted).max() == 0.0


def test_the_shortest_curve_is_its_own_line():
    assert straightened([1.0, 1.2]) == [1.0, 1.2]
    with pytest.raises(ValueError, match="V\\(1\\) = 1"):
        straightened([1.2, 1.3])
