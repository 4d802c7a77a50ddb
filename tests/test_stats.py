"""The test oracle itself: it must be able to fail."""
import numpy as np
import pytest

from tests.stats import NothingToTest, bins_by_mass, chi_square_pvalue


def test_bins_hold_the_minimum_mass_and_cover_every_token():
    probs = np.array([0.5, 0.01, 0.02, 0.3, 0.04, 0.13])
    bins = bins_by_mass(probs, 0.05)
    assert sorted(np.concatenate(bins).tolist()) == list(range(6))
    assert all(probs[b].sum() >= 0.05 for b in bins)


def test_bins_pour_tokens_in_increasing_mass_until_each_holds_the_minimum():
    """The module's rule, poured token by token here, against the helper (which finds each bin's end on a running
    sum): 300 seeded random laws with zeros, and laws whose masses hit the minimum exactly."""
    def poured(probs, least):
        bins, current, mass = [], [], 0.0
        for i in sorted((i for i in range(len(probs)) if probs[i] > 0), key=lambda i: (probs[i], i)):
            current.append(i)
            mass += probs[i]
            if mass >= least - 1e-12:
                bins.append(current)
                current, mass = [], 0.0
        if current and bins:
            bins[-1] += current
        elif current:
            bins.append(current)
        return bins

    rng = np.random.default_rng(1)
    for case in range(300):
        n = int(rng.integers(2, 200))
        probs = rng.dirichlet(np.full(n, rng.choice([0.05, 1.0]))) if case % 3 else np.full(n, 1 / n)
        probs[rng.random(n) < 0.2] = 0
        least = float(rng.choice([0.01, 0.05, 0.3, 2 / n]))
        assert [b.tolist() for b in bins_by_mass(probs / probs.sum(), least)] == poured(probs / probs.sum(), least)

    # laws whose masses add up to the minimum exactly, bin after bin
    assert [b.tolist() for b in bins_by_mass(np.full(4, 0.25), 0.5)] == [[0, 1], [2, 3]]
    assert [b.tolist() for b in bins_by_mass(np.full(20, 0.05), 0.05)] == [[i] for i in range(20)]


def test_a_minimum_mass_below_the_running_sums_rounding_is_refused():
    with pytest.raises(ValueError, match="min_bin_mass"):
        bins_by_mass(np.full(4, 0.25), 1e-12)


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


def test_the_stated_power_is_what_sampling_shows():
    """The power helper against simulation: 400 seeded tests of 2,000 draws from a law at the detectable w
    (mass moved between two of four bins) reject at p < 1e-3 about 90% of the time (between 84% and 95%);
    at half that w, far less often (under 50%)."""
    from tests.stats import detectable_effect

    expected = np.array([0.4, 0.3, 0.2, 0.1])
    w = detectable_effect(2_000, 4)
    rng = np.random.default_rng(5)

    def rejected(shift):
        law = expected + shift * np.array([1, 0, 0, -1]) / np.sqrt(1 / 0.4 + 1 / 0.1)
        counts = rng.multinomial(2_000, law, size=400)
        return np.mean([chi_square_pvalue(c, expected) < 1e-3 for c in counts])

    assert 0.84 <= rejected(w) <= 0.95
    assert rejected(w / 2) < 0.5
