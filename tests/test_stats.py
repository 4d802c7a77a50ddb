"""The test oracle itself: it must be able to fail."""
import numpy as np
import pytest

from tests.stats import NothingToTest, bins_by_mass, chi_square_pvalue


def test_bins_hold_the_minimum_mass_and_cover_every_token():
    probs = np.array([0.5, 0.01, 0.02, 0.3, 0.04, 0.13])
    bins = bins_by_mass(probs, 0.05)
    assert sorted(np.concatenate(bins).tolist()) == list(range(6))
    assert all(probs[b].sum() >= 0.05 for b in bins)


def test_a_wrong_law_is_caught():
    rng = np.random.default_rng(0)
    counts = np.bincount(rng.choice(3, size=5000, p=[0.5, 0.3, 0.2]), minlength=3)
    assert chi_square_pvalue(counts, [0.5, 0.3, 0.2]) > 1e-3
    assert chi_square_pvalue(counts, [0.4, 0.4, 0.2]) < 1e-6


def test_an_impossible_observation_gives_zero():
    assert chi_square_pvalue([10, 1], [1.0, 0.0]) == 0.0


def test_one_bin_is_nothing_to_test():
    with pytest.raises(NothingToTest):
        chi_square_pvalue([100, 0], [1.0, 0.0])
