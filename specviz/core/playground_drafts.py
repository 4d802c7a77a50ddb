"""The playground's multi-draft section: one level of k candidates on toy distributions, no model.

  - `simulate_drafts`: many vectorised rounds of one level: k i.i.d. draft samples tried in a random
    order against the current p (the exact rule, `core.tree`), or each distinct token tried once in a
    random order of the distinct tokens ("merged", the biased shortcut); chi-square against p.
  - `acceptance_curve`: the chance one level accepts a candidate, k = 1..8, in closed form
    1 - prod_{j<k} TV(p_j, q) (`tree.level_acceptance`), beside 1 - TV for the single draft.
Randomness only from a local torch.Generator(seed).
"""
from __future__ import annotations

import torch

from . import tree
from .config import DRAFTS_MAX, DRAFTS_MIN
from .playground import MAX_SAMPLES, MAX_SEED, check_pair, chi_square_pvalue, whole_number

DRAFT_VARIANTS = ("exact", "merged")


def _check(k, samples, variant) -> tuple[int, int]:
    k = whole_number("drafts", k, DRAFTS_MIN, DRAFTS_MAX)
    samples = whole_number("samples", samples, 1, MAX_SAMPLES)
    if variant not in DRAFT_VARIANTS:
        raise ValueError(f"variant must be one of {', '.join(DRAFT_VARIANTS)}, not {variant!r}")
    return int(k), int(samples)


def simulate_drafts(target, draft, k: int = 2, samples: int = 100_000, variant: str = "exact", seed: int = 0) -> dict:
    """`samples` independent rounds of one level with k candidates, vectorised over rounds:
       1. draft    k tokens x_1..x_k ~ q, i.i.d.
       2. order    a uniformly random order (merged: of the distinct tokens only, duplicates dropped)
       3. verify   try j (j = tries so far) is accepted when u < min(1, p_j(x)/q(x)); p_{j+1} = norm(max(0, p_j - q))
       4. correct  no candidate accepted after j tries: a token from p_j."""
    p, q = check_pair(target, draft)
    k, samples = _check(k, samples, variant)
    gen = torch.Generator().manual_seed(whole_number("seed", seed, 0, MAX_SEED))
    drafted = torch.multinomial(q, samples * k, replacement=True, generator=gen).view(samples, k)  # [S, k] 1.
    keys = torch.rand(samples, k, generator=gen, dtype=torch.float64)                              # [S, k] 2.
    if variant == "merged":  # a token equal to an earlier one in the sample is dropped
        duplicate = (drafted[:, :, None] == drafted[:, None, :]).tril(-1).any(-1)                  # [S, k]
        keys = keys.masked_fill(duplicate, float("inf"))
    order = keys.argsort(-1)
    tried_tokens = drafted.gather(-1, order)                                                       # [S, k]
    live = keys.gather(-1, order).isfinite()                                                       # [S, k]
    residuals = torch.stack(tree.residual_chain(p, q, k))                                          # [k+1, V]
    chance = (residuals / torch.where(q > 0, q, torch.ones_like(q))).clamp(max=1.0)                # [k+1, V]
    chance = torch.where(q > 0, chance, torch.zeros_like(chance))
    out = torch.full((samples,), -1, dtype=torch.long)
    tries = torch.zeros(samples, dtype=torch.long)
    u = torch.rand(samples, k, generator=gen, dtype=torch.float64)
    for i in range(k):                                                                             # 3. verify
        x = tried_tokens[:, i]
        judged = live[:, i] & (out < 0)
        accepted = judged & (u[:, i] < chance[tries, x])
        out = torch.where(accepted, x, out)
        tries = tries + (judged & ~accepted).long()
    accepted_share = float((out >= 0).double().mean())
    for j in range(k + 1):                                                                         # 4. correct
        rows = (out < 0) & (tries == j)
        n = int(rows.sum())
        if n:
            out[rows] = torch.multinomial(residuals[j], n, replacement=True, generator=gen)
    counts = torch.bincount(out, minlength=len(p))
    return {"variant": variant, "drafts": k, "samples": samples, "seed": int(seed), "counts": counts.tolist(),
            "expected": p.tolist(), "frequencies": (counts.double() / samples).tolist(),
            "p_value": chi_square_pvalue(counts, p), "acceptance_rate": accepted_share,
            "expected_acceptance_rate": tree.level_acceptance(p, q, k) if variant == "exact" else None}


def acceptance_curve(target, draft, max_drafts: int = DRAFTS_MAX) -> dict:
    """P(one level accepts a candidate) for k = 1..max_drafts (closed form), and 1 - TV(p, q)."""
    p, q = check_pair(target, draft)
    ks = list(range(1, max_drafts + 1))
    return {"drafts": ks, "acceptance": [tree.level_acceptance(p, q, k) for k in ks],
            "one_minus_tv": float(torch.minimum(p, q).sum())}
