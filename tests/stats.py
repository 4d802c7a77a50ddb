"""Statistical helpers for the seeded sampling tests: the app's bin merging, scipy's chi-square."""
from __future__ import annotations

import numpy as np
from scipy import stats

from specviz.playground import merge_bins


def chi_square_pvalue(counts, probs, min_bin_mass: float = 0.05) -> float:
    """Pearson chi-square p-value of `counts` against `probs`, bins merged to >= min_bin_mass
    (smallest expected mass first). Observations in a bin of zero expected mass give 0."""
    bins = merge_bins(np.asarray(counts, dtype=np.float64), np.asarray(probs, dtype=np.float64), min_bin_mass)
    if bins is None:
        return 0.0
    observed, expected = map(np.array, bins)
    if len(observed) < 2:
        return 1.0  # a single bin: all mass on it and nothing observed elsewhere
    return float(stats.chisquare(observed, expected * observed.sum()).pvalue)
