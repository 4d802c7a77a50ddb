"""The mathematics of speculative sampling, as pure functions over probability tensors.

Rows are positions, the last dimension is the vocabulary. Nothing here knows about models, the
UI or global state; randomness comes only from an optional `torch.Generator`.

Notation. In code: `target_probs` (the large model, p in Leviathan et al. 2023,
arXiv:2211.17192) and `draft_probs` (the small model, q there). Tran-Thien's "Mentored decoding"
(2023) swaps the letters (p = draft, q = target); Masada's lecture slides "Speculative Decoding"
write theta = draft, phi = target. The equations cited below are translated.

Over 300 lines on purpose: `verify` and the two rules it applies (exact, and mentored decoding's
plan) share their validation and are proven together in tests/core; splitting them would scatter
one algorithm across files.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
import torch

SUM_TOLERANCE = 1e-4        # how far a row of probabilities may sum from 1
TINY_RATIO = 1e-300         # the smallest target/draft ratio the bisection takes a log of
BISECTION_TOLERANCE = 1e-13  # stop bisecting log(lower threshold) when the bracket is this narrow
BISECTION_STEPS = 60         # ... or after this many halvings (2^-60 of the bracket)


# ----------------------------------------------------------------------------- validation


def check_probs(name: str, probs: torch.Tensor) -> None:
    """Raise ValueError unless `probs` holds finite, non-negative rows that sum to 1."""
    _check_shape(name, probs)
    _check_stats(name, *_prob_stats(probs).tolist())  # one read from the device


def _check_shape(name: str, probs: torch.Tensor) -> None:
    if not isinstance(probs, torch.Tensor):
        raise ValueError(f"{name} must be a torch.Tensor, got {type(probs).__name__}")
    if probs.dim() == 0 or probs.shape[-1] == 0 or probs.numel() == 0:
        raise ValueError(f"{name} must be non-empty with a vocabulary dimension, got shape {tuple(probs.shape)}")


def _prob_stats(probs: torch.Tensor) -> torch.Tensor:
    """[smallest entry, smallest row sum, largest row sum] in float64, left on the device so that callers
    can read several tensors' stats at once. A NaN or inf shows up in all three."""
    sums = probs.sum(-1, dtype=torch.float64).reshape(-1)
    return torch.stack([probs.min().double(), sums.min(), sums.max()])


def _check_stats(name: str, smallest: float, lowest_sum: float, highest_sum: float) -> None:
    if not all(map(math.isfinite, (smallest, lowest_sum, highest_sum))):
        raise ValueError(f"{name} contains NaN or infinite entries")
    if smallest < 0:
        raise ValueError(f"{name} has negative entries (min {smallest:.3g})")
    worst = max(abs(lowest_sum - 1), abs(highest_sum - 1))
    if worst > SUM_TOLERANCE:
        raise ValueError(f"{name} rows must sum to 1 (off by {worst:.3g}, tolerance {SUM_TOLERANCE})")


def sample(probs: torch.Tensor, generator: torch.Generator | None = None) -> int:
    """One token from a [V] distribution by inverse CDF: exact, and several times cheaper than
    torch.multinomial for a single draw. Tokens of probability 0 are never returned."""
    cdf = probs.cumsum(-1, dtype=torch.float64)  # [V]
    u = torch.rand((1,), generator=generator, device=probs.device, dtype=torch.float64)
    index = int(torch.searchsorted(cdf, u * cdf[-1], right=True))  # first i with cdf[i] > u * total
    if index < probs.shape[-1]:
        return index
    # u * total can round up to the total itself: then the last token of positive probability
    positive = torch.nonzero(probs > 0)
    if positive.numel() == 0:  # NaN logits land here (every comparison with NaN is false)
        raise ValueError("cannot sample: the distribution contains NaN or infinite entries, or no mass")
    return int(positive[-1])


def safe_divide(numerator: torch.Tensor, denominator: torch.Tensor, fallback: torch.Tensor) -> torch.Tensor:
    """numerator / denominator where denominator > 0, else fallback: never a 0/0 or x/0."""
    positive = denominator > 0
    return torch.where(positive, numerator / torch.where(positive, denominator, torch.ones_like(denominator)), fallback)


def _check_pair(target_probs: torch.Tensor, draft_probs: torch.Tensor) -> None:
    check_probs("target_probs", target_probs)
    check_probs("draft_probs", draft_probs)
    if target_probs.shape != draft_probs.shape:
        raise ValueError(f"target_probs {tuple(target_probs.shape)} and draft_probs "
                         f"{tuple(draft_probs.shape)} must have the same shape")


def _check_budget(kl_budget: float) -> float:
    kl_budget = float(kl_budget)
    if not kl_budget >= 0 or kl_budget == float("inf"):
        raise ValueError(f"kl_budget must be a finite number >= 0, got {kl_budget}")
    return kl_budget


# ----------------------------------------------------------------------------- divergences


def acceptance_rate(target_probs: torch.Tensor, draft_probs: torch.Tensor) -> torch.Tensor:
    """sum_x min(p, q) = 1 - TV(p, q): the chance a drafted token is accepted at this position
    (Leviathan et al., Lemma 3.3: beta = 1 - D_LV(p, q); its expectation over positions is Leviathan's acceptance rate alpha)."""
    return torch.minimum(target_probs, draft_probs).sum(-1)


def tv_distance(target_probs: torch.Tensor, draft_probs: torch.Tensor) -> torch.Tensor:
    """Total variation distance 1/2 sum_x |p - q|."""
    return 0.5 * (target_probs - draft_probs).abs().sum(-1)


def kl_divergence(probs: torch.Tensor, other: torch.Tensor) -> torch.Tensor:
    """KL(probs || other) = sum_x probs ln(probs / other), with 0 ln 0 = 0 and +inf where other = 0 < probs."""
    ratio = torch.where(probs > 0, probs / other, torch.ones_like(probs))  # x/0 = inf is the right KL here
    return torch.where(probs > 0, probs * torch.log(ratio), torch.zeros_like(probs)).sum(-1)


def entropy(probs: torch.Tensor) -> torch.Tensor:
    """Shannon entropy -sum_x p ln p in nats, with 0 ln 0 = 0."""
    return -torch.where(probs > 0, probs * torch.log(probs), torch.zeros_like(probs)).sum(-1)


# ----------------------------------------------------------------------------- lossless pieces


def accept_probability(target_probs: torch.Tensor, draft_probs: torch.Tensor,
                       tokens: torch.Tensor) -> torch.Tensor:
    """min(1, p(x) / q(x)) for each row's drafted token x (Leviathan et al., Algorithm 1; Masada's slides, eq. 4)."""
    p = target_probs.gather(-1, tokens.unsqueeze(-1)).squeeze(-1)
    q = draft_probs.gather(-1, tokens.unsqueeze(-1)).squeeze(-1)
    return torch.clamp(p / q, max=1.0)


def residual_distribution(target_probs: torch.Tensor, draft_probs: torch.Tensor) -> torch.Tensor:
    """norm(max(0, p - q)) per row (Leviathan et al., Algorithm 1; Masada's slides, eq. 1).

    Where p == q there is no residual mass, a rejection cannot happen, and the row is returned as
    `target_probs` rather than 0/0.
    """
    residual = torch.clamp(target_probs - draft_probs, min=0)
    return safe_divide(residual, residual.sum(-1, keepdim=True), target_probs)


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


# ----------------------------------------------------------------------------- one verification


@dataclass(frozen=True)
class Verification:
    """What one verify round decided. Rows of the tensors are the examined positions."""
    n_accepted: int
    tokens: list[int]            # accepted draft tokens, then exactly one resampled or bonus token
    uniforms: torch.Tensor       # [n_examined] u_i ~ U(0, 1) drawn, compared with accept_probs
    drafted_accept_probs: torch.Tensor  # [gamma] chance every draft token had, examined or not
    final_probs: torch.Tensor    # [V] the distribution the last token was drawn from
    drafted_kl: torch.Tensor | None = None  # [gamma] mentored: KL(target || output) per position; None when exact

    @property
    def accept_probs(self) -> torch.Tensor:
        """[n_examined] the chance each examined draft token had of acceptance."""
        return self.drafted_accept_probs[: self.n_examined]

    @property
    def bonus(self) -> bool:
        """True when every drafted token was accepted and the last token came from the target."""
        return self.n_accepted == len(self.uniforms)

    @property
    def n_examined(self) -> int:
        return len(self.uniforms)


def verify(target_probs: torch.Tensor, draft_probs: torch.Tensor, draft_tokens: torch.Tensor, *,
           kl_budget: float = 0.0, generator: torch.Generator | None = None) -> Verification:
    """One round of speculative sampling (Leviathan et al. Alg. 1 = Chen et al. Alg. 2).

    target_probs [gamma+1, V]: the target's distribution at each drafted position and one more.
    draft_probs  [gamma, V]:   the draft's distribution each draft token was sampled from.
    draft_tokens [gamma]:      the drafted tokens.
    kl_budget = 0 is exact (the output is distributed as target_probs); > 0 is mentored
    decoding (Tran-Thien 2023), lossy by at most kl_budget nats per position.
    """
    kl_budget = _check_budget(kl_budget)
    if not isinstance(draft_probs, torch.Tensor) or draft_probs.dim() != 2 or draft_probs.shape[0] < 1:
        raise ValueError(f"draft_probs must be [gamma, V] with gamma >= 1, got {getattr(draft_probs, 'shape', None)}")
    _check_shape("target_probs", target_probs)
    gamma, vocab = draft_probs.shape
    if tuple(target_probs.shape) != (gamma + 1, vocab):
        raise ValueError(f"target_probs must be [gamma+1, V] = [{gamma + 1}, {vocab}], got {tuple(target_probs.shape)}")
    draft_tokens = torch.as_tensor(draft_tokens, device=draft_probs.device)
    if (draft_tokens.shape != (gamma,) or draft_tokens.dtype.is_floating_point or draft_tokens.dtype.is_complex
            or draft_tokens.dtype == torch.bool):
        raise ValueError(f"draft_tokens must be {gamma} integer ids, got shape {tuple(draft_tokens.shape)} "
                         f"of {draft_tokens.dtype}")
    draft_tokens = draft_tokens.long()
    # Every value check from one read back to the host (on a GPU each read is a sync): both tensors' stats,
    # the ids' range and the drafted tokens' draft probabilities, gathered at clamped ids until checked
    drafted_q = draft_probs.gather(-1, draft_tokens.clamp(0, vocab - 1).unsqueeze(-1)).squeeze(-1)  # [gamma]
    stats = torch.cat([_prob_stats(target_probs), _prob_stats(draft_probs),
                       torch.stack([draft_tokens.min(), draft_tokens.max()]).double(),
                       drafted_q.min().double().reshape(1)]).tolist()
    _check_stats("target_probs", *stats[0:3])
    _check_stats("draft_probs", *stats[3:6])
    lowest_id, highest_id, smallest_q = stats[6:]
    if lowest_id < 0 or highest_id >= vocab:
        raise ValueError(f"draft_tokens must lie in [0, {vocab}), got {draft_tokens.tolist()}")
    if smallest_q <= 0:
        pos = int((drafted_q <= 0).nonzero()[0])
        raise ValueError(f"draft token {int(draft_tokens[pos])} at position {pos} has zero draft "
                         f"probability: it cannot have been sampled from draft_probs")

    # 2. verify: accept draft token i when u_i < its accept chance (min(1, p/q) when exact)
    plan = None
    if kl_budget > 0:
        plan = mentored_plan(target_probs[:gamma], draft_probs, kl_budget)
        accept = plan.accept_probs.gather(-1, draft_tokens.unsqueeze(-1)).squeeze(-1)  # [gamma]
    else:
        accept = accept_probability(target_probs[:gamma], draft_probs, draft_tokens)  # [gamma]
    uniforms = torch.rand(gamma, generator=generator, device=draft_probs.device, dtype=accept.dtype)
    # the first rejection, found on the host from one read of 2 gamma numbers (fewer tensor operations
    # than a cumulative sum on the device); strict: a token with accept probability 0 is never kept
    drawn, chances = torch.stack([uniforms, accept]).tolist()
    n = next((i for i, (u, chance) in enumerate(zip(drawn, chances)) if not u < chance), gamma)
    examined = min(n + 1, gamma)

    # 3. correct: resample at the first rejection, or draw the bonus token from the target
    if n < gamma:
        final = plan.resample_probs[n] if plan is not None else residual_distribution(target_probs[n], draft_probs[n])
    else:
        final = target_probs[gamma]
    last = sample(final, generator)
    return Verification(n_accepted=n, tokens=draft_tokens[:n].tolist() + [last],
                        uniforms=uniforms[:examined], drafted_accept_probs=accept, final_probs=final,
                        drafted_kl=plan.kl if plan is not None else None)
