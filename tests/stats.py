"""The statistical oracle of the seeded sampling tests, written apart from the app's own chi-square.

Bins follow scipy's advice (no tiny expected counts) by a rule stated here and coded here: tokens
in increasing order of expected mass are poured into a bin until it holds at least `min_bin_mass`;
a remainder too small for a bin of its own joins the last one. The p-value is scipy's Pearson
chi-square. With fewer than two bins there is nothing to test, and the helper fails the test rather
than passing it.
"""
from __future__ import annotations

import numpy as np
from scipy import stats


class NothingToTest(AssertionError):
    """The expected law puts (almost) all its mass in one bin: a chi-square test cannot fail."""


def bins_by_mass(probs: np.ndarray, min_bin_mass: float) -> list[np.ndarray]:
    """Index arrays, one per bin, over the tokens of nonzero expected mass. The pouring is found one bin at a time
    on the running sum (a two-token law has V * V = 16.7 million tokens and at most 1 / min_bin_mass bins: a
    bin's end is the first token whose running sum reaches the bin's start plus min_bin_mass)."""
    if not min_bin_mass > 1e-9:  # below the running sum's own rounding a bin could end before it starts
        raise ValueError(f"min_bin_mass must be above 1e-9, not {min_bin_mass!r}")
    probs = np.asarray(probs, dtype=np.float64)
    order = np.argsort(probs, kind="stable")
    order = order[probs[order] > 0]
    poured = np.cumsum(probs[order])
    bins, start = [], 0
    while start < len(order):
        before = poured[start - 1] if start else 0.0
        # rounding must not decide whether a bin is full
        end = int(np.searchsorted(poured, before + min_bin_mass - 1e-12, side="left"))
        if end >= len(order):  # a remainder too small for a bin of its own joins the last one
            if bins:
                bins[-1] = np.concatenate([bins[-1], order[start:]])
            else:
                bins.append(order[start:])
            break
        end = max(end, start)  # a bin holds at least one token, whatever the rounding
        bins.append(order[start:end + 1])
        start = end + 1
    return bins


def chi_square_pvalue(counts, probs, min_bin_mass: float = 0.05) -> float:
    """Pearson chi-square p-value of `counts` against `probs` over bins_by_mass' bins. A sample
    that observed a token of probability 0 gets 0; fewer than two bins raise NothingToTest."""
    counts = np.asarray(counts, dtype=np.float64)
    probs = np.asarray(probs, dtype=np.float64)
    probs = probs / probs.sum()
    if counts[probs == 0].sum() > 0:
        return 0.0
    bins = bins_by_mass(probs, min_bin_mass)
    if len(bins) < 2:
        raise NothingToTest(f"all expected mass falls into {len(bins)} bin(s): choose a law worth testing")
    observed = np.array([counts[b].sum() for b in bins])
    expected = np.array([probs[b].sum() for b in bins]) * observed.sum()
    return float(stats.chisquare(observed, expected).pvalue)


def detectable_effect(samples: int, bins: int, alpha: float = 1e-3, power: float = 0.9) -> float:
    """The smallest effect the chi-square catches: Cohen's w = sqrt(sum (observed law - expected)^2 / expected)
    over the bins that a test of `samples` draws and `bins` bins rejects at p < `alpha` with probability `power`
    (the statistic is then noncentral chi-square with bins - 1 degrees of freedom and noncentrality samples w^2).
    For a feel of the number: moving mass m from one bin of mass a to one of mass b gives w = m sqrt(1/a + 1/b)."""
    critical = stats.chi2.ppf(1 - alpha, bins - 1)
    low, high = 0.0, 10.0
    for _ in range(60):  # power rises with w: bisect
        mid = (low + high) / 2
        if stats.ncx2.sf(critical, bins - 1, samples * mid * mid) >= power:
            high = mid
        else:
            low = mid
    return high


def bins_of(probs, min_bin_mass: float = 0.05) -> int:
    """How many bins `chi_square_pvalue` pools `probs` into."""
    probs = np.asarray(probs, dtype=np.float64)
    return len(bins_by_mass(probs / probs.sum(), min_bin_mass))
