"""Mentored decoding's plan: the acceptance rule that maximises acceptance under a KL budget
(Tran-Thien, "Mentored decoding", 2023), as pure functions over probability tensors.

Tran-Thien writes p = draft, q = target; here target_probs is the large model and draft_probs the small one.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
import torch

from .probability import _check_budget, _check_pair, kl_divergence, residual_distribution, safe_divide

TINY_RATIO = 1e-300         # the smallest target/draft ratio the bisection takes a log of
BISECTION_TOLERANCE = 1e-13  # stop bisecting log(lower threshold) when the bracket is this narrow
BISECTION_STEPS = 60         # ... or after this many halvings (2^-60 of the bracket)


# ----------------------------------------------------------------------------- mentored decoding


@dataclass(frozen=True)
class MentoredPlan:
    """Optimal acceptance/resampling rule for one position (Tran-Thien, "Mentored decoding", summary of Section 4).

    For a [V] input the scalars are floats; for an [N, V] input they are tensors of shape [N].
    The thresholds are Tran-Thien's alpha and beta on the ratio target/draft; they get names of
    their own here because alpha is also Leviathan's acceptance rate on the same screen.
    """
    accept_probs: torch.Tensor    # Tran-Thien's r_i: the chance of accepting draft token i
    resample_probs: torch.Tensor  # Tran-Thien's s_i: the distribution drawn from after a rejection
    output_probs: torch.Tensor    # Tran-Thien's pi_i = draft_i r_i + s_i (1 - sum_j draft_j r_j)
    acceptance_rate: float | torch.Tensor  # sum_i draft_i r_i
    kl: float | torch.Tensor               # KL(target || pi)
    lower_threshold: float | torch.Tensor  # Tran-Thien's alpha <= 1: ratios below it are thinned
    upper_threshold: float | torch.Tensor  # Tran-Thien's beta >= 1: ratios above it get resample mass


class _SortedPrefix(NamedTuple):
    """One row's tokens sorted by ratio = target / draft, with the prefix sums that make every
    threshold query O(log V). Index k of a `*_below` array sums the k smallest ratios."""
    ratio: np.ndarray        # [V] ascending; +inf where the draft gives 0
    target_below: np.ndarray  # [V+1] sum of target over the k smallest ratios
    draft_below: np.ndarray   # [V+1] sum of draft over them
    tlog_below: np.ndarray    # [V+1] sum of target * ln(ratio) over them (KL's middle band)
    neg_f: np.ndarray         # [V] -f(j), f(j) = target-tail(j) / ratio_j - draft-tail(j), made monotone
    smallest: float           # the smallest positive ratio


def _sorted_prefixes(t: torch.Tensor, d: torch.Tensor) -> list[_SortedPrefix]:
    """Per row of t, d [N, V] (float64): the sorted ratios and their prefix sums."""
    n_rows = t.shape[0]
    # Tokens neither model can emit never matter; give them ratio +inf so they sort last.
    ratio = safe_divide(t, d, torch.full_like(t, float("inf")))
    ratio, order = ratio.sort(-1)                                            # [N, V] ascending
    ts, ds = t.gather(-1, order), d.gather(-1, order)
    zero = torch.zeros(n_rows, 1, dtype=t.dtype, device=t.device)
    t_below = torch.cat([zero, ts.cumsum(-1)], -1)                           # [N, V+1]
    d_below = torch.cat([zero, ds.cumsum(-1)], -1)                           # [N, V+1]
    finite = torch.isfinite(ratio) & (ts > 0)
    tlog = torch.where(finite, ts * torch.log(torch.where(finite, ratio, torch.ones_like(ratio))), torch.zeros_like(ts))
    tlog_below = torch.cat([zero, tlog.cumsum(-1)], -1)                      # [N, V+1]
    # f(j): eq. 28's right-hand side at beta = ratio_j, falling in j
    t_tail, d_tail = t_below[:, -1:] - t_below[:, :-1], d_below[:, -1:] - d_below[:, :-1]
    f = torch.where(torch.isfinite(ratio) & (ratio > 0), t_tail / ratio.clamp_min(TINY_RATIO) - d_tail,
                    torch.where(ratio > 0, -d_tail, torch.full_like(ratio, float("inf"))))
    neg_f = (-f).cummax(-1).values  # guard monotonicity against rounding, for searchsorted
    smallest = torch.where(ratio > 0, ratio, torch.full_like(ratio, float("inf"))).min(-1).values
    # The bisection touches O(log V) numbers per step: plain floats and numpy beat torch's per-op cost.
    arrays = [x.cpu().numpy() for x in (ratio, t_below, d_below, tlog_below, neg_f)]
    return [_SortedPrefix(*(a[row] for a in arrays), smallest=float(smallest[row])) for row in range(n_rows)]


def mentored_plan(target_probs: torch.Tensor, draft_probs: torch.Tensor, kl_budget: float) -> MentoredPlan:
    """Maximise the acceptance rate subject to KL(target || output) <= kl_budget (Tran-Thien, "Mentored decoding", 2023).

    Tran-Thien writes p = draft, q = target; here t = target, d = draft, ratio = t / d. With tokens
    ordered by ratio, the optimum is fixed by a lower threshold L <= 1 and an upper one U >= 1
    (Tran-Thien's alpha and beta):
        ratio <= L:        accept chance ratio / L, no resample mass,        t / pi = L
        L < ratio < U:     accept chance 1,         no resample mass,        t / pi = ratio
        ratio >= U:        accept chance 1,         s = (t/U - d) / (1 - R), t / pi = U
    with the rejected mass 1 - R = sum relu(d - t/L) (eq. 24) = sum relu(t/U - d) (eqs. 27-28).
    KL falls as L rises, so L is found by bisection (Tran-Thien, Algorithm 1); each bisection step
    costs O(log V) through prefix sums over the sorted ratios, so the whole plan is one sort plus
    a few vectorised passes, whatever the vocabulary size.

    Tran-Thien assumes the target gives every token some mass. Where it gives exactly 0 (after
    top-k / top-p / temperature-0 warping) the plan keeps the accept chance at 0 for that token,
    so mentored decoding, like exact decoding, never emits a token the warped target rules out.
    """
    _check_pair(target_probs, draft_probs)
    kl_budget = _check_budget(kl_budget)
    single = target_probs.dim() == 1
    t = target_probs.reshape(-1, target_probs.shape[-1]).double()  # [N, V]
    d = draft_probs.reshape(-1, draft_probs.shape[-1]).double()    # [N, V]
    # float32 rows may sum to 1 +- 1e-7; unnormalised, a row whose residual is that rounding error
    # would get an output that misses it, and a KL of inf where the true one is 0
    t, d = t / t.sum(-1, keepdim=True), d / d.sum(-1, keepdim=True)

    # A token the target rules out (t = 0 < d, e.g. cut by top-k) has ratio 0 and accept chance 0
    # for every L > 0: the plan never emits a token outside the target's support, the constraint
    # under which it is optimal. Rows that draft no such token may accept everything within budget.
    forbidden = ((t == 0) & (d > 0)).any(-1, keepdim=True)                    # [N, 1]
    accept_all = (kl_divergence(t, d).unsqueeze(-1) <= kl_budget) & ~forbidden  # [N, 1]
    rows = _sorted_prefixes(t, d)
    solve = (~accept_all.squeeze(-1)).tolist() if kl_budget > 0 else [False] * len(rows)
    lower = [_solve_lower_threshold(row, kl_budget) if go else 1.0 for row, go in zip(rows, solve)]
    upper = [_thresholds(low, row)[1] for low, row in zip(lower, rows)]
    lower_t = torch.tensor(lower, dtype=t.dtype, device=t.device).unsqueeze(-1)  # [N, 1]
    upper_t = torch.tensor(upper, dtype=t.dtype, device=t.device).unsqueeze(-1)  # [N, 1]

    # Materialise the accept chances, s and pi in vocabulary order (eqs. 23 and 26).
    accept = safe_divide(t, lower_t * d, torch.ones_like(d)).clamp(max=1.0)
    accept = torch.where(accept_all, torch.ones_like(accept), accept)
    resample = (residual_distribution(t, d) if kl_budget == 0 else
                _normalise_or(torch.clamp(t / upper_t - d, min=0), t))
    first_ratio = safe_divide(t, d, torch.full_like(t, float("inf"))).min(-1, keepdim=True).values
    lower_t = torch.where(accept_all, first_ratio.clamp(max=1.0), lower_t)
    acc = (d * accept).sum(-1, keepdim=True)
    pi = d * accept + resample * (1 - acc).clamp_min(0)  # rows may sum to 1 + 1e-7: no negative mass
    kl = kl_divergence(t, pi)

    def shape(x):
        return x.reshape(target_probs.shape).to(target_probs.dtype)

    def scalar(x):
        x = x.reshape(-1)
        return x.item() if single else x

    return MentoredPlan(accept_probs=shape(accept), resample_probs=shape(resample), output_probs=shape(pi),
                        acceptance_rate=scalar(acc), kl=scalar(kl), lower_threshold=scalar(lower_t),
                        upper_threshold=scalar(upper_t))


def _thresholds(lower: float, row: _SortedPrefix) -> tuple[float, float, float]:
    """(rejected mass 1 - R, upper threshold, KL) for one row at a given lower threshold: O(log V)."""
    size = len(row.ratio)
    k = int(np.searchsorted(row.ratio, lower, side="right"))                     # #{ratio <= L}
    reject = max(row.draft_below[k] - row.target_below[k] / lower, 0.0)         # eq. 24
    n = max(min(int(np.searchsorted(row.neg_f, -reject, side="left")), size - 1), k)  # first j: f(j) <= 1 - R
    t_top = row.target_below[-1] - row.target_below[n]
    d_top = row.draft_below[-1] - row.draft_below[n]
    upper = max(t_top / (reject + d_top), 1.0) if reject + d_top > 0 else 1.0   # eq. 27
    kl = math.log(lower) * row.target_below[k] + (row.tlog_below[n] - row.tlog_below[k]) + math.log(upper) * t_top
    return reject, upper, kl


def _solve_lower_threshold(row: _SortedPrefix, kl_budget: float) -> float:
    """The smallest L in [smallest ratio, 1] whose KL is within budget (Tran-Thien, Algorithm 1).

    KL falls as L rises (0 at L = 1), so bisect on log(L), keeping `hi` feasible."""
    lo, hi = math.log(min(max(row.smallest, TINY_RATIO), 1.0)), 0.0
    for _ in range(BISECTION_STEPS):
        mid = 0.5 * (lo + hi)
        if _thresholds(math.exp(mid), row)[2] <= kl_budget:
            hi = mid
        else:
            lo = mid
        if hi - lo < BISECTION_TOLERANCE:
            break
    return math.exp(hi)


def _normalise_or(mass: torch.Tensor, fallback: torch.Tensor) -> torch.Tensor:
    return safe_divide(mass, mass.sum(-1, keepdim=True), fallback)
