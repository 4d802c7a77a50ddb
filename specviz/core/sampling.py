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

from .mentored import MentoredPlan, mentored_plan  # re-exported: sampling is the public face
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

    # 2. verify and 3. correct, vectorised over the gamma positions; the uniforms drawn in the order this
    # function always drew them (gamma in the accept chances' dtype, then one float64 for the last token),
    # so a seeded call gives the tokens it gave before the round moved to the device
    plan = mentored_plan(target_probs[:gamma], draft_probs, kl_budget) if kl_budget > 0 else None
    accept_dtype = target_probs.dtype if plan is not None else torch.promote_types(target_probs.dtype,
                                                                                   draft_probs.dtype)
    device = draft_probs.device
    uniforms = torch.cat([torch.rand(gamma, generator=generator, device=device, dtype=accept_dtype).double(),
                          torch.rand((1,), generator=generator, device=device, dtype=torch.float64)])
    result = verify_round(target_probs, draft_probs, draft_tokens, uniforms, kl_budget=kl_budget, plan=plan)
    read = pack(n_accepted=result.n_accepted, tokens=result.tokens).read()  # one read back to the host
    n = read["n_accepted"]
    if read["tokens"][n] == NO_TOKEN:  # NaN logits land here (every comparison with NaN is false)
        raise ValueError("cannot sample: the distribution contains NaN or infinite entries, or no mass")
    examined = min(n + 1, gamma)
    return Verification(n_accepted=n, tokens=read["tokens"][: n + 1],
                        uniforms=uniforms[:examined].to(accept_dtype), drafted_accept_probs=result.accept_probs,
                        final_probs=result.final_probs, drafted_kl=result.drafted_kl)


# ----------------------------------------------------------------------------- the round on the device
# Everything below returns tensors and reads nothing back to the host (on a GPU each read is a
# synchronisation), except mentored decoding's plan, whose bisection runs on the host.

NO_TOKEN = -1  # the padding of a round's emitted tokens, and what a row without mass samples


def round_uniforms(gamma: int, generator: torch.Generator | None, device: torch.device | str) -> torch.Tensor:
    """[gamma+1] float64 uniforms for one round in one call: u_0..u_{gamma-1} against the accept chances,
    u_gamma for the last (resampled or bonus) token. Drawing them at once changes which numbers a seed
    gives each decision compared with drawing them one by one, so seeded runs differ from such code."""
    return torch.rand(gamma + 1, generator=generator, device=device, dtype=torch.float64)


def sample_from_uniforms(probs: torch.Tensor, uniforms: torch.Tensor) -> torch.Tensor:
    """Tokens from [..., V] distributions by inverse CDF at the given [...] uniforms: a LongTensor [...],
    the first i with cdf[i] > u * total (right-continuous, so a token of probability 0 is never chosen:
    its cdf equals its predecessor's). u * total can round up to the total itself; then the last token
    of positive probability, chosen on the device. A row without mass (NaN, all zeros) gives NO_TOKEN."""
    cdf = probs.cumsum(-1, dtype=torch.float64)                                   # [..., V]
    threshold = (uniforms.to(torch.float64) * cdf[..., -1]).unsqueeze(-1)         # [..., 1]
    index = torch.searchsorted(cdf, threshold, right=True).squeeze(-1)            # [...]
    positions = torch.arange(probs.shape[-1], device=probs.device)
    last_positive = torch.where(probs > 0, positions, NO_TOKEN).amax(-1)           # [...]
    return torch.where(index < probs.shape[-1], index, last_positive)


@dataclass(frozen=True)
class Round:
    """One verify round as tensors on the probabilities' device (read them with `pack(...).read()`). Shapes are
    for one round; a batch of rounds (`verify_round` with leading dimensions [...]) puts [...] before each."""
    n_accepted: torch.Tensor      # 0-d long: the accepted prefix's length n
    tokens: torch.Tensor          # [gamma+1] long: the n accepted drafts, the last token, then NO_TOKEN
    last: torch.Tensor            # 0-d long: the resampled (n < gamma) or bonus (n = gamma) token
    uniforms: torch.Tensor        # [gamma+1] the round's uniforms, as given
    accepted: torch.Tensor        # [gamma] bool: u_i < accept chance, at every position (examined or not)
    accept_probs: torch.Tensor    # [gamma] the accept chance of each drafted token
    drafted_target_probs: torch.Tensor  # [gamma] p(x_i)
    drafted_draft_probs: torch.Tensor   # [gamma] q(x_i)
    final_probs: torch.Tensor     # [V] the distribution the last token was drawn from
    drafted_kl: torch.Tensor | None = None  # [gamma] mentored: KL(target || output) per position


def verify_round(target_probs: torch.Tensor, draft_probs: torch.Tensor, draft_tokens: torch.Tensor,
                 uniforms: torch.Tensor, *, kl_budget: float = 0.0, plan: MentoredPlan | None = None) -> Round:
    """Speculative sampling's verify and correct (Leviathan et al. Alg. 1 = Chen et al. Alg. 2), vectorised
    over the positions as vLLM's rejection sampler and transformers' `_speculative_sampling` do.

    target_probs [gamma+1, V], draft_probs [gamma, V], draft_tokens [gamma] (a LongTensor on their device),
    uniforms [gamma+1] (`round_uniforms`). Leading dimensions [...] before each make it a batch of independent
    rounds decided in one call (the tests draw tens of thousands of rounds so). Values are trusted (checking them
    is a host read: `verify` does it); shapes are checked. kl_budget > 0 is mentored decoding through its plan
    (Tran-Thien 2023), whose bisection runs on the host; pass `plan` to reuse one computed for
    target_probs[..., :gamma, :] (a plan of one round's [gamma, V] rows serves a batch of rounds on those rows).
    """
    gamma, vocab = draft_probs.shape[-2:]
    batch = draft_probs.shape[:-2]
    if tuple(target_probs.shape) != (*batch, gamma + 1, vocab) or tuple(draft_tokens.shape) != (*batch, gamma) \
            or tuple(uniforms.shape) != (*batch, gamma + 1):
        raise ValueError(f"verify_round wants target_probs [{gamma + 1}, {vocab}], draft_tokens [{gamma}] and "
                         f"uniforms [{gamma + 1}] (after the same leading dimensions as draft_probs), got "
                         f"{tuple(target_probs.shape)}, {tuple(draft_tokens.shape)} and {tuple(uniforms.shape)}")
    index = draft_tokens.long().unsqueeze(-1)                                      # [..., gamma, 1]
    drafted_p = target_probs[..., :gamma, :].gather(-1, index).squeeze(-1)         # [..., gamma]
    drafted_q = draft_probs.gather(-1, index).squeeze(-1)                          # [..., gamma]
    if kl_budget > 0 and plan is None:
        plan = mentored_plan(target_probs[..., :gamma, :], draft_probs, kl_budget)
    if plan is not None:
        accept = plan.accept_probs.expand(*batch, gamma, vocab).gather(-1, index).squeeze(-1)  # [..., gamma]
        corrections = plan.resample_probs.expand(*batch, gamma, vocab)            # [..., gamma, V]
    else:
        accept = torch.clamp(drafted_p / drafted_q, max=1.0)                       # [..., gamma] min(1, p/q)
        corrections = residual_distribution(target_probs[..., :gamma, :], draft_probs)  # [..., gamma, V]
    # 2. verify: strict u_i < chance, so a token with accept chance 0 is never kept; n = first rejection
    accepted = uniforms[..., :gamma] < accept                                      # [..., gamma]
    stops = torch.cat([~accepted, accepted.new_ones(*batch, 1)], -1)               # [..., gamma+1]
    n = stops.int().argmax(-1)                                                     # [...]: first True
    # 3. correct: the residual at the first rejection, or the target's next row for the bonus token
    candidates = torch.cat([corrections, target_probs[..., gamma:, :].to(corrections.dtype)], -2)  # [..., gamma+1, V]
    if batch:
        final = candidates.gather(-2, n[..., None, None].expand(*batch, 1, vocab)).squeeze(-2)  # [..., V]
    else:
        final = candidates.index_select(0, n.reshape(1)).squeeze(0)                # [V]
    last = sample_from_uniforms(final, uniforms[..., gamma])                       # [...] long
    positions = torch.arange(gamma + 1, device=draft_tokens.device)
    drafted = torch.cat([draft_tokens.long(), draft_tokens.new_full((*batch, 1), NO_TOKEN, dtype=torch.long)], -1)
    n_, last_ = n.unsqueeze(-1), last.unsqueeze(-1)
    tokens = torch.where(positions < n_, drafted, torch.where(positions == n_, last_, NO_TOKEN))  # [..., gamma+1]
    return Round(n_accepted=n, tokens=tokens, last=last, uniforms=uniforms, accepted=accepted,
                 accept_probs=accept, drafted_target_probs=drafted_p, drafted_draft_probs=drafted_q,
                 final_probs=final, drafted_kl=_batched_kl(plan, batch, gamma))


def _batched_kl(plan: MentoredPlan | None, batch: torch.Size, gamma: int) -> torch.Tensor | None:
    """The plan's KL per position as [..., gamma]: a plan of one round's rows serves every round of a batch."""
    if plan is None or not batch:
        return None if plan is None else plan.kl
    kl = plan.kl.reshape(-1)
    return kl.expand(*batch, gamma) if kl.numel() == gamma else kl.reshape(*batch, gamma)


@dataclass(frozen=True)
class Packed:
    """Several tensors flattened into one float64 tensor, so that the host reads them all at once."""
    flat: torch.Tensor                                    # [sum of sizes] float64, on the device
    layout: tuple[tuple[str, tuple[int, ...], bool], ...]  # (name, shape, integral) per tensor, in order

    def read(self) -> dict[str, object]:
        """The one host read: each tensor back as a number (0-d) or nested lists, ints where it held ids
        or flags (exact: float64 holds every integer below 2**53)."""
        values, out, at = self.flat.tolist(), {}, 0
        for name, shape, integral in self.layout:
            size = 1
            for dim in shape:
                size *= dim
            chunk = [int(v) for v in values[at:at + size]] if integral else values[at:at + size]
            out[name], at = _nest(chunk, shape), at + size
        return out


def pack(**tensors: torch.Tensor) -> Packed:
    """Everything a round's trace and counters need, as one tensor for a single host read (`.read()`)."""
    layout = tuple((name, tuple(t.shape), not (t.dtype.is_floating_point or t.dtype.is_complex))
                   for name, t in tensors.items())
    flat = torch.cat([t.detach().reshape(-1).to(torch.float64) for t in tensors.values()])
    return Packed(flat=flat, layout=layout)


def _nest(values: list, shape: tuple[int, ...]):
    if not shape:
        return values[0]
    if len(shape) == 1:
        return values
    step = len(values) // shape[0] if shape[0] else 0
    return [_nest(values[i * step:(i + 1) * step], shape[1:]) for i in range(shape[0])]
