"""Why sampling-based verification accepts more than exact matching: a temperature sweep on a context.

One forward of each model over the context gives both next-token distributions at every position;
at each temperature T and over the last `positions` positions this reports the mean of
  sum min(p_T, q_T)   the acceptance rate of speculative sampling (Leviathan's alpha per position),
  sum p_T q_T         the chance that a target sample equals a draft sample: what verification by
                      exact match accepts when it has samples but no draft probabilities,
and, once, the greedy exact-match rate: how often the two argmaxes agree (the T = 0 limit).

Both models are fed as decoding feeds them (`CachedModel`): a draft that reads the target's hidden states
reads the target's own at every position, as at the first drafted position of a round.
"""
from __future__ import annotations

import torch

from ...core import sampling
from ...core.warping import warp
from ..caches.cache import CachedModel
from ..models.loading import ModelPair
from .feature_draft import cached_draft, reads_features

TEMPERATURES = (0.25, 0.5, 0.7, 1.0, 1.3, 1.6, 2.0)


@torch.inference_mode()
def _logits(pair: ModelPair, token_ids: list[int], keep: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The target's and the draft's logits [keep, V] at the last `keep` positions of the context, in float32."""
    ids = token_ids[-pair.context_window:]
    target = CachedModel(pair.target, pair.vocab_size, keep_features=reads_features(pair.draft))
    target.prefill(ids[:-keep])  # in chunks, within the event's time (limits.py)
    target_logits = target.forward(ids[-keep:], keep=keep).float()              # [keep, V]
    draft = cached_draft(pair.draft, pair.vocab_size, target)
    draft.prefill(ids[:-keep])
    draft_logits = draft.forward(ids[-keep:], keep=keep).float()                # [keep, V]
    return target_logits, draft_logits


@torch.inference_mode()
def temperature_sweep(pair: ModelPair, token_ids: list[int], temperatures=TEMPERATURES, positions: int = 64) -> dict:
    if len(token_ids) < 1:
        raise ValueError("the sweep needs a context of at least one token")
    keep = min(positions, len(token_ids[-pair.context_window:]))
    target, draft = _logits(pair, token_ids, keep)  # [keep, V] each
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
    target, draft = _logits(pair, token_ids, 1)
    p, q = config.warp(target[-1]), config.warp(draft[-1])  # [V] each
    exact = float(sampling.acceptance_rate(p, q))
    mentored = float(sampling.mentored_plan(p, q, kl_budget).acceptance_rate) if kl_budget > 0 else exact
    return exact, mentored
