"""Statistical helpers for the seeded sampling tests."""
from __future__ import annotations

import numpy as np
from scipy import stats


def chi_square_pvalue(counts, probs, min_bin_mass: float = 0.05) -> float:
    """Pearson chi-square p-value of `counts` against `probs`, bins merged to >= min_bin_mass.

    Bins are sorted by expected mass and the smallest are merged until each merged bin holds at
    least `min_bin_mass` of the expected total (scipy's advice: expected counts not too small).
    Observations in a bin of zero expected mass make the p-value 0: an impossible token appeared.
    """
    counts = np.asarray(counts, dtype=np.float64)
    probs = np.asarray(probs, dtype=np.float64)
    probs = probs / probs.sum()
    if counts[probs == 0].sum() > 0:
        return 0.0
    keep = probs > 0
    counts, probs = counts[keep], probs[keep]
    order = np.argsort(probs)
    merged_obs, merged_exp, acc_o, acc_e = [], [], 0.0, 0.0
    for i in order:
        acc_o += counts[i]
        acc_e += probs[i]
        if acc_e >= min_bin_mass:
            merged_obs.append(acc_o)
            merged_exp.append(acc_e)
            acc_o = acc_e = 0.0
    if acc_e > 0:  # leftover small mass joins the last bin
        if merged_obs:
            merged_obs[-1] += acc_o
            merged_exp[-1] += acc_e
        else:
            merged_obs.append(acc_o)
            merged_exp.append(acc_e)
    if len(merged_obs) < 2:
        return 1.0  # a single bin: all mass on it and nothing observed elsewhere
    total = counts.sum()
    return float(stats.chisquare(np.array(merged_obs), np.array(merged_exp) * total).pvalue)
