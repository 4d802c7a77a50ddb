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


def test_a_jump_past_two_positions_keeps_its_shape():
    """A third position that needs a slower kernel: no line fits within 0.15, so the jump stays where it is (a line
    would price V(2) at 1.61 and smear the jump over every step)."""
    jump = [1.0, 1.1, 2.0, 2.02, 2.04, 2.06, 2.08, 2.1, 2.12]
    assert straightened(jump) == pytest.approx(jump)


def test_a_gpu_curve_keeps_its_free_positions_up_to_its_knee():
    knee = [1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.3, 1.6, 1.9]  # free up to 6 positions, then 0.3 each
    assert straightened(knee) == pytest.approx(knee)


def test_a_fall_in_a_curve_no_line_fits_is_averaged_not_carried_forward():
    curve = [1.0, 1.1, 2.0, 1.9, 2.1, 2.06, 2.08, 2.1, 2.12]
    assert straightened(curve) == pytest.approx([1.0, 1.1, 1.95, 1.95, 2.08, 2.08, 2.08, 2.1, 2.12])


def test_measured_cpu_curves_are_read_as_their_line():
    """The bundled smollm2 pair's curves timed on a 2-core CPU (docs/benchmarks.md, 2026-11-28) lie within 0.09 of
    their lines: each is read as its line, V(2) 1.034 and 0.021 / 0.030 a further position."""
    before = straightened([1.0, 1.031, 1.055, 1.039, 1.082, 1.200, 1.148, 1.153, 1.146])
    after = straightened([1.0, 1.064, 1.075, 1.070, 1.105, 1.170, 1.157, 1.152, 1.322])
    assert np.ptp(steps(before)) < 1e-12 and steps(before)[0] == pytest.approx(0.0207, abs=1e-3)
    assert np.ptp(steps(after)) < 1e-12 and steps(after)[0] == pytest.approx(0.0300, abs=1e-3)
