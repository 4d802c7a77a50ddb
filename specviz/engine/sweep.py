"""Why sampling-based verification accepts more than exact matching: a temperature sweep on a context.

One forward of each model over the context gives both next-token distributions at every position;
at each temperature T and over the last `positions` positions this reports the mean of
  sum min(p_T, q_T)   the acceptance rate of speculative sampling (Leviathan's alpha per position),
  sum p_T q_T         the chance that a target sample equals a draft sample: what verification by
                      exact match accepts when it has samples but no draft probabilities,
and, once, the greedy exact-match rate: how often the two argmaxes agree (the T = 0 limit).
"""
from __future__ import annotations

import torch

from ..core import sampling
from ..core.warping import warp
from .loading import ModelPair

TEMPERATURES = (0.25, 0.5, 0.7, 1.0, 1.3, 1.6, 2.0)


@torch.inference_mode()
def temperature_sweep(pair: ModelPair, token_ids: list[int], temperatures=TEMPERATURES, positions: int = 64) -> dict:
    if len(token_ids) < 1:
        raise ValueError("the sweep needs a context of at least one token")
    ids = torch.tensor([token_ids[-pair.context_window:]], device=pair.device)
    keep = min(positions, ids.shape[1])
    target = pair.target(input_ids=ids, logits_to_keep=keep).logits[0, :, : pair.vocab_size].float()  # [keep, V]
    draft = pair.draft(input_ids=ids, logits_to_keep=keep).logits[0, :, : pair.vocab_size].float()    # [keep, V]
    alpha, collide = [], []
    for temperature in temperatures:
        p, q = warp(target, temperature), warp(draft, temperature)  # [keep, V]
        alpha.append(float(sampling.acceptance_rate(p, q).mean()))
        collide.append(float((p * q).sum(-1).mean()))
    greedy = float((target.argmax(-1) == draft.argmax(-1)).double().mean())
    return {"temperatures": list(temperatures), "acceptance_rate": alpha, "exact_match_of_samples": collide,
            "greedy_exact_match": greedy, "positions": keep}


@torch.inference_mode()
def next_acceptance(pair: ModelPair, token_ids: list[int], config, kl_budget: float) -> tuple[float, float]:
    """(exact, mentored) expected acceptance rate at the next position after `token_ids`, under the run's
    warping (`config.warp`): Σ min(p, q) and the mentored plan's Σ q·accept at `kl_budget`."""
    if len(token_ids) < 1:
        raise ValueError("the acceptance needs a context of at least one token")
    ids = torch.tensor([token_ids[-pair.context_window:]], device=pair.device)
    p = config.warp(pair.target(input_ids=ids, logits_to_keep=1).logits[0, -1, : pair.vocab_size].float())  # [V]
    q = config.warp(pair.draft(input_ids=ids, logits_to_keep=1).logits[0, -1, : pair.vocab_size].float())   # [V]
    exact = float(sampling.acceptance_rate(p, q))
    mentored = float(sampling.mentored_plan(p, q, kl_budget).acceptance_rate) if kl_budget > 0 else exact
    return exact, mentored
