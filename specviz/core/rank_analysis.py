"""The evidence for several drafts, from single-draft rejections: ranks, and what k = 2..4 tries would add.

For each round that rejected a draft (pure functions over StepTraces):
  target rank of the rejected token   its rank under p among the target's top-k (1 = the target's own
                                      first choice); beyond the traced top-k it is counted as "> k".
  draft rank of the resampled token   the rank under q of the token drawn from the residual; a token the
                                      draft ranks 2nd or 3rd is one a second or third draft could have offered.
  sibling acceptance                  with k drafts (core.tree, SpecInfer's rule) the next try at the same depth
                                      is a fresh draft sample judged against the residual r = norm(max(0, p - q)):
                                      it is accepted with chance sum_x min(r, q) (the identity in core.tree's
                                      docstring), and the try after that against norm(max(0, r - q)), and so on.
                                      Computed on the correction's traced candidates only (the residual's and
                                      the target's top-k), so it is a lower bound.
Averaged over rejections, the chance that tries 2..k all fail is F_k = mean over rejections of
prod_j (1 - s_j); `predicted_sibling_acceptance` gives s'_j with (1 - s'_1)...(1 - s'_{k-1}) = F_k, the
form `core.whatif.with_drafts` takes.
"""
from __future__ import annotations

import math
from collections.abc import Iterable

TRIES_MAX = 4


def _rank(candidates, token: int, key: str, top: int) -> int | None:
    """1-based rank of `token` under `key` among candidates holding that side's top-`top`; None beyond it."""
    order = sorted(candidates, key=lambda c: -getattr(c, key))
    ranks = [i + 1 for i, c in enumerate(order) if c.id == token]
    return ranks[0] if ranks and ranks[0] <= top else None


def sibling_chain(residual: list[float], draft: list[float], tries: int = TRIES_MAX - 1) -> list[float]:
    """Acceptance of the 2nd, 3rd, ... try at a depth: sum min(r_j, q) with r_{j+1} = norm(max(0, r_j - q))."""
    out, r = [], list(residual)
    for _ in range(tries):
        total = sum(r)
        if total <= 0:
            out.append(0.0)
            continue
        r = [x / total for x in r]
        out.append(sum(min(a, b) for a, b in zip(r, draft)))
        r = [max(0.0, a - b) for a, b in zip(r, draft)]
    return out


def rank_analysis(traces: Iterable, top: int = 10) -> dict:
    """Rank histograms and the predicted sibling acceptance over every single-draft rejection in `traces`."""
    target_ranks, draft_ranks, chains, rejections = {}, {}, [], 0
    for tr in traces:
        if tr.correction.kind != "resampled" or tr.n_accepted >= len(tr.positions):
            continue
        rejections += 1
        position = tr.positions[tr.n_accepted]
        t_rank = _rank(position.candidates, position.draft_token, "target_prob", top)
        d_rank = _rank(position.candidates, tr.correction.token, "draft_prob", top)
        target_ranks[t_rank or f"> {top}"] = target_ranks.get(t_rank or f"> {top}", 0) + 1
        draft_ranks[d_rank or f"> {top}"] = draft_ranks.get(d_rank or f"> {top}", 0) + 1
        cands = tr.correction.candidates
        if tr.correction.residual_probs:
            chains.append(sibling_chain(tr.correction.residual_probs, [c.draft_prob for c in cands]))
    order = lambda h: {str(k): h[k] for k in sorted(h, key=lambda k: (isinstance(k, str), k))}
    fail = [sum(math.prod(1 - s for s in chain[:j]) for chain in chains) / len(chains) if chains else 1.0
            for j in range(TRIES_MAX)]  # fail[j]: tries 2..j+1 all fail (fail[0] = 1)
    predicted = [1 - fail[j + 1] / fail[j] if fail[j] > 0 else 0.0 for j in range(TRIES_MAX - 1)]
    return {"rejections": rejections, "top": top, "target_rank_of_rejected": order(target_ranks),
            "draft_rank_of_resampled": order(draft_ranks),
            "resampled_in_draft_top": {str(k): sum(v for r, v in draft_ranks.items() if isinstance(r, int) and r <= k)
                                       / rejections if rejections else 0.0 for k in range(2, TRIES_MAX + 1)},
            "predicted_sibling_acceptance": predicted}

