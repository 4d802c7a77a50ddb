"""Probability rows and the lossless pieces of speculative sampling: validation, divergences, accept chance
and residual, as pure functions over probability tensors (rows are positions, the last dimension the vocabulary)."""
from __future__ import annotations

import math

import torch

SUM_TOLERANCE = 1e-4        # how far a row of probabilities may sum from 1


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
