"""Logits to the probabilities both models sample from: temperature, then top-k, then top-p.

The same processing, in the same order and with the same tie rules, as transformers'
`TemperatureLogitsWarper`, `TopKLogitsWarper` and `TopPLogitsWarper` inside `generate` (the tests
compare against them), written here so that the maths layer needs no transformers. Both models go
through the same warping, so the speculative output equals sampling from the *warped* target.
"""
from __future__ import annotations

import torch


def _top_k(scores: torch.Tensor, k: int) -> torch.Tensor:
    """Keep every score >= the k-th largest (ties at the boundary survive, as in transformers)."""
    kth = scores.topk(min(k, scores.shape[-1]), dim=-1).values[..., -1:]  # [..., 1]
    return scores.masked_fill(scores < kth, -torch.inf)


def _top_p(scores: torch.Tensor, top_p: float) -> torch.Tensor:
    """Drop the least likely tokens whose cumulative mass is <= 1 - top_p; the likeliest always stays."""
    ascending, order = scores.sort(dim=-1)
    cumulative = ascending.softmax(-1).cumsum(-1)  # [..., V], ascending probability
    remove = cumulative <= 1 - top_p
    remove[..., -1] = False
    return scores.masked_fill(remove.scatter(-1, order, remove), -torch.inf)


def warp(logits: torch.Tensor, temperature: float = 1.0, top_k: int | None = None,
         top_p: float | None = None) -> torch.Tensor:
    """Logits [..., V] -> probabilities [..., V].

    temperature = 0 gives the one-hot argmax: `sampling.verify` then accepts a draft token iff both
    argmaxes agree, the greedy limit that is sometimes mistaken for the whole method (Kylin's
    "Speculative Decoding 的 Sampling 误解浅析" sets out that misreading).
    """
    temperature = float(temperature)
    if not temperature >= 0 or temperature == float("inf"):
        raise ValueError(f"temperature must be a finite number >= 0, got {temperature}")
    if top_k is not None and (int(top_k) != top_k or top_k < 0):
        raise ValueError(f"top_k must be a whole number >= 0 (0 or None = off), got {top_k}")
    if top_p is not None and not 0 < top_p <= 1:
        raise ValueError(f"top_p must be in (0, 1] (1 or None = off), got {top_p}")
    shape = logits.shape
    if not shape or shape[-1] == 0:
        raise ValueError(f"logits must have a vocabulary dimension of at least one token, got shape {tuple(shape)}")
    if temperature == 1.0 and not top_k and (top_p is None or top_p >= 1.0):  # plain sampling: one operation
        return logits.softmax(-1, dtype=torch.float32)
    scores = logits.float()  # [..., V]; every step below works along the last dimension
    if temperature == 0:
        return torch.nn.functional.one_hot(scores.argmax(-1), scores.shape[-1]).to(scores.dtype)
    if temperature != 1.0:
        # shifted by the row's maximum first (softmax is unchanged by a shift): a temperature as small as 1e-40
        # would take a logit of 5 past float32's largest number, inf - inf then making the softmax NaN; shifted,
        # every score is <= 0 and a tiny temperature gives the argmax's one-hot limit, ties sharing it (a
        # temperature below float32's smallest, 1e-45, is 0 there: the maxima, 0 / 0, stay 0)
        shifted = scores - scores.amax(-1, keepdim=True)                     # [..., V], <= 0
        scores = torch.where(shifted == 0, shifted, shifted / temperature)
    if top_k:
        scores = _top_k(scores, int(top_k))
    if top_p is not None and top_p < 1.0:
        scores = _top_p(scores, float(top_p))
    return scores.softmax(-1)
