"""The mathematics of speculative sampling, as pure functions over probability tensors.

Rows are positions, the last dimension is the vocabulary. Nothing here knows about models, the
UI or global state; randomness comes only from an optional `torch.Generator`.

Notation. In code: `target_probs` (the large model, p in Leviathan et al. and seed 000) and
`draft_probs` (the small model, q there). Seed 003 swaps the letters (p = draft, q = target),
seed 004 writes theta = draft, phi = target; the equations cited below are translated.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

SUM_TOLERANCE = 1e-4


# ----------------------------------------------------------------------------- validation


def check_probs(name: str, probs: torch.Tensor) -> None:
    """Raise ValueError unless `probs` holds finite, non-negative rows that sum to 1."""
    if not isinstance(probs, torch.Tensor):
        raise ValueError(f"{name} must be a torch.Tensor, got {type(probs).__name__}")
    if probs.dim() == 0 or probs.shape[-1] == 0:
        raise ValueError(f"{name} must have a non-empty vocabulary dimension, got shape {tuple(probs.shape)}")
    if not torch.isfinite(probs).all():
        raise ValueError(f"{name} contains NaN or infinite entries")
    if (probs < 0).any():
        raise ValueError(f"{name} has negative entries (min {probs.min().item():.3g})")
    worst = (probs.sum(-1, dtype=torch.float64) - 1).abs().max().item()
    if worst > SUM_TOLERANCE:
        raise ValueError(f"{name} rows must sum to 1 (off by {worst:.3g}, tolerance {SUM_TOLERANCE})")


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
    """beta = sum_x min(p, q) = 1 - TV(p, q): the chance a drafted token is accepted (seed 000, Lemma)."""
    return torch.minimum(target_probs, draft_probs).sum(-1)


def tv_distance(target_probs: torch.Tensor, draft_probs: torch.Tensor) -> torch.Tensor:
    """Total variation distance 1/2 sum_x |p - q|."""
    return 0.5 * (target_probs - draft_probs).abs().sum(-1)


def kl_divergence(probs: torch.Tensor, other: torch.Tensor) -> torch.Tensor:
    """KL(probs || other) = sum_x probs ln(probs / other), with 0 ln 0 = 0 and +inf where other = 0 < probs."""
    ratio = torch.where(probs > 0, probs / other, torch.ones_like(probs))
    return torch.where(probs > 0, probs * torch.log(ratio), torch.zeros_like(probs)).sum(-1)


# ----------------------------------------------------------------------------- warping


def warp(logits: torch.Tensor, temperature: float = 1.0, top_k: int | None = None,
         top_p: float | None = None) -> torch.Tensor:
    """Logits [..., V] -> probabilities, processed as `generate` does: temperature, top-k, top-p.

    Both models go through the same warping, so the speculative output equals sampling from the
    *warped* target. temperature = 0 gives the one-hot argmax: `verify` then accepts a draft
    token iff both argmaxes agree, the greedy limit that seed 002 mistakes for the whole method.
    """
    from transformers.generation.logits_process import (TemperatureLogitsWarper, TopKLogitsWarper,
                                                        TopPLogitsWarper)

    temperature = float(temperature)
    if not temperature >= 0 or temperature == float("inf"):
        raise ValueError(f"temperature must be a finite number >= 0, got {temperature}")
    if top_k is not None and (int(top_k) != top_k or top_k < 0):
        raise ValueError(f"top_k must be a whole number >= 0 (0 or None = off), got {top_k}")
    if top_p is not None and not 0 < top_p <= 1:
        raise ValueError(f"top_p must be in (0, 1] (1 or None = off), got {top_p}")
    shape = logits.shape
    scores = logits.reshape(-1, shape[-1]).float()  # [N, V]
    if temperature == 0:
        return torch.nn.functional.one_hot(scores.argmax(-1), shape[-1]).to(scores.dtype).reshape(shape)
    if temperature != 1.0:
        scores = TemperatureLogitsWarper(temperature)(None, scores)
    if top_k:
        scores = TopKLogitsWarper(int(top_k))(None, scores)
    if top_p is not None and top_p < 1.0:
        scores = TopPLogitsWarper(float(top_p))(None, scores)
    return scores.softmax(-1).reshape(shape)


# ----------------------------------------------------------------------------- lossless pieces


def accept_probability(target_probs: torch.Tensor, draft_probs: torch.Tensor,
                       tokens: torch.Tensor) -> torch.Tensor:
    """min(1, p(x) / q(x)) for each row's drafted token x (Leviathan Alg. 1; seed 004 eq. 4)."""
    p = target_probs.gather(-1, tokens.unsqueeze(-1)).squeeze(-1)
    q = draft_probs.gather(-1, tokens.unsqueeze(-1)).squeeze(-1)
    return torch.clamp(p / q, max=1.0)


def residual_distribution(target_probs: torch.Tensor, draft_probs: torch.Tensor) -> torch.Tensor:
    """norm(max(0, p - q)) per row (Leviathan Alg. 1; seed 004 eq. 1).

    Where p == q there is no residual mass, a rejection cannot happen, and the row is returned as
    `target_probs` rather than 0/0.
    """
    residual = torch.clamp(target_probs - draft_probs, min=0)
    mass = residual.sum(-1, keepdim=True)
    return torch.where(mass > 0, residual / torch.where(mass > 0, mass, torch.ones_like(mass)), target_probs)


# ----------------------------------------------------------------------------- mentored decoding


@dataclass(frozen=True)
class MentoredPlan:
    """Optimal acceptance/resampling rule for one position (seed 003, summary of Section 4).

    For a [V] input the scalars are floats; for an [N, V] input they are tensors of shape [N].
    """
    accept_probs: torch.Tensor   # r_i: chance of accepting draft token i
    resample_probs: torch.Tensor  # s_i: distribution drawn from after a rejection
    output_probs: torch.Tensor   # pi_i = q_i r_i + s_i (1 - sum_j q_j r_j), q = draft here
    acceptance_rate: float | torch.Tensor  # sum_i draft_i r_i
    kl: float | torch.Tensor               # KL(target || pi)
    alpha: float | torch.Tensor
    beta: float | torch.Tensor


def mentored_plan(target_probs: torch.Tensor, draft_probs: torch.Tensor, kl_budget: float) -> MentoredPlan:
    """Maximise the acceptance rate subject to KL(target || output) <= kl_budget (seed 003).

    Seed 003 writes p = draft, q = target; here t = target, d = draft, ratio = t / d. With tokens
    ordered by ratio, the optimum is fixed by two thresholds alpha <= 1 <= beta:
        ratio <= alpha:         r = ratio / alpha, s = 0,                 t / pi = alpha
        alpha < ratio < beta:   r = 1,             s = 0,                 t / pi = ratio
        ratio >= beta:          r = 1,             s = (t/beta - d)/(1-R), t / pi = beta
    with 1 - R = sum relu(d - t/alpha)  (eq. 24)  = sum relu(t/beta - d)  (eq. 27-28).
    KL falls as alpha rises, so alpha is found by bisection (seed 003, Algorithm 1); each
    bisection step costs O(log V) through prefix sums over the sorted ratios, so the whole plan is
    one sort plus a few vectorised passes, whatever the vocabulary size.

    Seed 003 assumes the target gives every token some mass. Where it gives exactly 0 (after
    top-k / top-p / temperature-0 warping) the plan keeps r = 0 for that token, so mentored
    decoding, like exact decoding, never emits a token the warped target rules out.
    """
    _check_pair(target_probs, draft_probs)
    kl_budget = _check_budget(kl_budget)
    single = target_probs.dim() == 1
    t = target_probs.reshape(-1, target_probs.shape[-1]).double()  # [N, V]
    d = draft_probs.reshape(-1, draft_probs.shape[-1]).double()    # [N, V]
    n_rows = t.shape[0]

    # Tokens neither model can emit never matter; give them ratio +inf so they sort last.
    ratio = torch.where(d > 0, t / torch.where(d > 0, d, torch.ones_like(d)), torch.full_like(t, float("inf")))
    ratio, order = ratio.sort(-1)                                            # [N, V] ascending
    ts, ds = t.gather(-1, order), d.gather(-1, order)
    zero = torch.zeros(n_rows, 1, dtype=t.dtype)
    t_below = torch.cat([zero, ts.cumsum(-1)], -1)                           # [N, V+1] sum_{i<k} t
    d_below = torch.cat([zero, ds.cumsum(-1)], -1)                           # [N, V+1] sum_{i<k} d
    t_total, d_total = t_below[:, -1:], d_below[:, -1:]
    finite = torch.isfinite(ratio) & (ts > 0)
    tlog = torch.where(finite, ts * torch.log(torch.where(finite, ratio, torch.ones_like(ratio))), torch.zeros_like(ts))
    tlog_below = torch.cat([zero, tlog.cumsum(-1)], -1)                      # [N, V+1]
    # f(j) = t-tail(j) / ratio_j - d-tail(j): eq. 28's right-hand side at beta = ratio_j, falling in j
    t_tail, d_tail = t_total - t_below[:, :-1], d_total - d_below[:, :-1]
    f = torch.where(torch.isfinite(ratio) & (ratio > 0), t_tail / ratio.clamp_min(1e-300) - d_tail,
                    torch.where(ratio > 0, -d_tail, torch.full_like(ratio, float("inf"))))
    neg_f = (-f).cummax(-1).values.contiguous()  # guard monotonicity against rounding for searchsorted

    def thresholds(alpha):  # alpha [N, 1] -> (reject mass 1 - R, beta, KL), all [N, 1]
        k = torch.searchsorted(ratio, alpha, right=True)                     # #{ratio <= alpha}
        reject = (d_below.gather(-1, k) - t_below.gather(-1, k) / alpha).clamp_min(0)   # eq. 24
        n = torch.searchsorted(neg_f, -reject, right=False).clamp(max=ratio.shape[-1] - 1)
        n = torch.maximum(n, k)
        t_top = t_total - t_below.gather(-1, n)
        d_top = d_total - d_below.gather(-1, n)
        beta = torch.where(reject + d_top > 0, t_top / (reject + d_top).clamp_min(1e-300), torch.ones_like(t_top))  # eq. 27
        beta = beta.clamp_min(1.0)
        kl = (torch.log(alpha) * t_below.gather(-1, k)
              + (tlog_below.gather(-1, n) - tlog_below.gather(-1, k))
              + torch.log(beta) * t_top)
        return reject, beta, kl

    # A token the target rules out (t = 0 < d, e.g. cut by top-k) has ratio 0 and r = 0 for every
    # alpha > 0: the plan never emits a token outside the target's support, the constraint under
    # which it is optimal. Rows that draft no such token may accept everything within budget.
    forbidden = ((t == 0) & (d > 0)).any(-1, keepdim=True)                    # [N, 1]
    kl_full = kl_divergence(t, d).unsqueeze(-1)                              # [N, 1] KL(target || draft)
    accept_all = (kl_full <= kl_budget) & ~forbidden
    # Bisection on log(alpha) over [smallest positive ratio, 1]: KL(alpha) falls to 0 at alpha = 1.
    smallest = torch.where(ratio > 0, ratio, torch.full_like(ratio, float("inf"))).min(-1, keepdim=True).values
    lo = torch.log(smallest.clamp(1e-300, 1.0))                              # [N, 1]
    hi = torch.zeros_like(lo)
    if kl_budget > 0:
        for _ in range(64):
            mid = 0.5 * (lo + hi)
            _, _, kl_mid = thresholds(torch.exp(mid))
            ok = kl_mid <= kl_budget
            hi = torch.where(ok, mid, hi)
            lo = torch.where(ok, lo, mid)
    alpha = torch.exp(hi)                                                    # smallest alpha within budget
    reject, beta, _ = thresholds(alpha)

    # Materialise r, s, pi in vocabulary order (eqs. 23 and 26).
    r = torch.where(d > 0, torch.clamp(t / (alpha * torch.where(d > 0, d, torch.ones_like(d))), max=1.0), torch.ones_like(d))
    s_raw = torch.clamp(t / beta - d, min=0)
    s = residual_distribution(t, d) if kl_budget == 0 else _normalise_or(s_raw, t)
    r = torch.where(accept_all, torch.ones_like(r), r)
    alpha = torch.where(accept_all, ratio[:, :1].clamp(max=1.0), alpha)
    acc = (d * r).sum(-1, keepdim=True)
    pi = d * r + s * (1 - acc).clamp_min(0)  # rows may sum to 1 + 1e-7: no negative mass
    kl = kl_divergence(t, pi)

    def shape(x):
        return x.reshape(target_probs.shape).to(target_probs.dtype)

    def scalar(x):
        x = x.reshape(-1)
        return x.item() if single else x

    return MentoredPlan(accept_probs=shape(r), resample_probs=shape(s), output_probs=shape(pi),
                        acceptance_rate=scalar(acc), kl=scalar(kl), alpha=scalar(alpha), beta=scalar(beta))


def _normalise_or(mass: torch.Tensor, fallback: torch.Tensor) -> torch.Tensor:
    total = mass.sum(-1, keepdim=True)
    return torch.where(total > 0, mass / torch.where(total > 0, total, torch.ones_like(total)), fallback)


# ----------------------------------------------------------------------------- one verification


@dataclass(frozen=True)
class Verification:
    """What one verify round decided. Rows of the tensors are the examined positions."""
    n_accepted: int
    tokens: list[int]            # accepted draft tokens, then exactly one resampled or bonus token
    uniforms: torch.Tensor       # [n_examined] r_i drawn, compared with accept_probs
    accept_probs: torch.Tensor   # [n_examined] chance each examined draft token had of acceptance
    final_probs: torch.Tensor    # [V] the distribution the last token was drawn from

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
    decoding (seed 003), lossy by at most kl_budget nats per position.
    """
    kl_budget = _check_budget(kl_budget)
    if not isinstance(draft_probs, torch.Tensor) or draft_probs.dim() != 2 or draft_probs.shape[0] < 1:
        raise ValueError(f"draft_probs must be [gamma, V] with gamma >= 1, got {getattr(draft_probs, 'shape', None)}")
    check_probs("target_probs", target_probs)
    check_probs("draft_probs", draft_probs)
    gamma, vocab = draft_probs.shape
    if tuple(target_probs.shape) != (gamma + 1, vocab):
        raise ValueError(f"target_probs must be [gamma+1, V] = [{gamma + 1}, {vocab}], got {tuple(target_probs.shape)}")
    draft_tokens = torch.as_tensor(draft_tokens, device=draft_probs.device)
    if draft_tokens.shape != (gamma,) or draft_tokens.dtype.is_floating_point:
        raise ValueError(f"draft_tokens must be {gamma} integer ids, got shape {tuple(draft_tokens.shape)}")
    if ((draft_tokens < 0) | (draft_tokens >= vocab)).any():
        raise ValueError(f"draft_tokens must lie in [0, {vocab}), got {draft_tokens.tolist()}")
    drafted_q = draft_probs.gather(-1, draft_tokens.unsqueeze(-1)).squeeze(-1)  # [gamma]
    if (drafted_q <= 0).any():
        pos = int((drafted_q <= 0).nonzero()[0])
        raise ValueError(f"draft token {int(draft_tokens[pos])} at position {pos} has zero draft "
                         f"probability: it cannot have been sampled from draft_probs")

    # 2. verify: accept draft token i with probability r_i (min(1, p/q) when exact)
    plan = None
    if kl_budget > 0:
        plan = mentored_plan(target_probs[:gamma], draft_probs, kl_budget)
        accept = plan.accept_probs.gather(-1, draft_tokens.unsqueeze(-1)).squeeze(-1)  # [gamma]
    else:
        accept = accept_probability(target_probs[:gamma], draft_probs, draft_tokens)  # [gamma]
    uniforms = torch.rand(gamma, generator=generator, device=draft_probs.device, dtype=accept.dtype)
    accepted = uniforms < accept  # strict: a token with accept probability 0 is never kept
    n = int(((~accepted).cumsum(-1) < 1).sum())
    examined = min(n + 1, gamma)

    # 3. correct: resample at the first rejection, or draw the bonus token from the target
    if n < gamma:
        final = plan.resample_probs[n] if plan is not None else residual_distribution(target_probs[n], draft_probs[n])
    else:
        final = target_probs[gamma]
    last = int(torch.multinomial(final, 1, generator=generator))
    return Verification(n_accepted=n, tokens=draft_tokens[:n].tolist() + [last],
                        uniforms=uniforms[:examined], accept_probs=accept[:examined], final_probs=final)
