"""The mathematics of speculative sampling, as pure functions over probability tensors.

Rows are positions, the last dimension is the vocabulary. Nothing here knows about models, the
UI or global state; randomness comes only from an optional `torch.Generator`.

Notation. In code: `target_probs` (the large model, p in Leviathan et al. 2023,
arXiv:2211.17192) and `draft_probs` (the small model, q there). Tran-Thien's "Mentored decoding"
(2023) swaps the letters (p = draft, q = target); Masada's lecture slides "Speculative Decoding"
write theta = draft, phi = target. The equations cited below are translated.

The pieces live beside this module and are re-exported here, so `sampling.X` stays the one name to use:
`probability` (validation, divergences, accept chance, residual) and `mentored` (mentored decoding's plan).
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from .mentored import MentoredPlan, mentored_plan  # noqa: F401  (re-exported: sampling is the public face)
from .probability import (  # noqa: F401  (re-exported)
    SUM_TOLERANCE,
    _check_budget,
    _check_pair,
    _check_shape,
    _check_stats,
    _prob_stats,
    accept_probability,
    acceptance_rate,
    check_probs,
    entropy,
    kl_divergence,
    residual_distribution,
    safe_divide,
    tv_distance,
)


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
