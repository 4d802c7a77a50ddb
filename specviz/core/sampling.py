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

import dataclasses
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
    uniforms: torch.Tensor       # [n_examined] float64 u_i ~ U(0, 1) drawn, compared with accept_probs
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

    # 2. verify and 3. correct, vectorised over the gamma positions, from one draw of gamma + V uniforms
    plan = mentored_plan(target_probs[:gamma], draft_probs, kl_budget) if kl_budget > 0 else None
    uniforms = round_uniforms(gamma, vocab, generator, draft_probs.device)
    result = verify_round(target_probs, draft_probs, draft_tokens, uniforms, kl_budget=kl_budget, plan=plan)
    read = pack(n_accepted=result.n_accepted, tokens=result.tokens).read()  # one read back to the host
    n = read["n_accepted"]
    if read["tokens"][n] == NO_TOKEN:  # NaN logits land here (every comparison with NaN is false)
        raise ValueError("cannot sample: the distribution contains NaN or infinite entries, or no mass")
    examined = min(n + 1, gamma)
    return Verification(n_accepted=n, tokens=read["tokens"][: n + 1],
                        uniforms=uniforms[:examined], drafted_accept_probs=result.accept_probs,
                        final_probs=result.final_probs, drafted_kl=result.drafted_kl)


# ----------------------------------------------------------------------------- the round on the device
# Everything below returns tensors and reads nothing back to the host (on a GPU each read is a
# synchronisation), except mentored decoding's plan, whose bisection runs on the host.

NO_TOKEN = -1  # the padding of a round's emitted tokens, and what a race over a row without mass draws
SMALLEST_UNIFORM = torch.finfo(torch.float64).tiny  # u = 0 is drawn as this: its exponential stays finite


def round_uniforms(gamma: int, vocab: int, generator: torch.Generator | None,
                   device: torch.device | str) -> torch.Tensor:
    """[gamma + V] float64 uniforms for one round in one call: u_0..u_{gamma-1} against the accept chances, then V
    for the exponential race that draws the last (resampled or bonus) token (`race_keys`)."""
    return torch.rand(gamma + vocab, generator=generator, device=device, dtype=torch.float64)


def race_keys(uniforms: torch.Tensor) -> torch.Tensor:
    """log u for uniforms u in [0, 1): the keys of an exponential race (E = -log u ~ Exp(1)). A zero uniform is
    taken as the smallest positive float64, so every key is finite and negative: no 0/0, no NaN, no token of
    probability 0 chosen while one of positive probability exists."""
    return uniforms.clamp_min(SMALLEST_UNIFORM).log()


def race(weights: torch.Tensor, keys: torch.Tensor, *, checked: bool = True) -> torch.Tensor:
    """A token from each [..., V] row of non-negative weights, with chance weight / sum(weights): the exponential
    race argmax_x w_x / E_x with E_x = -log u_x ~ Exp(1) independent (the smallest of the independent
    Exp(w_x)-distributed E_x / w_x is x's with chance w_x / sum w), as vLLM's rejection sampler draws its
    recovered token. Written as argmin w / log u (`race_keys`): no cumulative sum and no normalisation, so a
    residual max(0, p - q) is raced as it is. LongTensor [...]. `checked`: a row without mass (all zeros, or NaN)
    gives NO_TOKEN; unchecked, some index of it (a caller that checks its rows itself saves two operations)."""
    scores = weights / keys                                                  # [..., V] -w/E: <= 0
    if not checked:
        return scores.argmin(-1)
    best = scores.min(-1)                                                    # NaN wins a min: a NaN row stays NaN
    return torch.where(best.values < 0, best.indices, NO_TOKEN)


@dataclass(frozen=True)
class Round:
    """One verify round as tensors on the probabilities' device (read them with `pack(...).read()`). Shapes are
    for one round; a batch of rounds (`verify_round` with leading dimensions [...]) puts [...] before each."""
    n_accepted: torch.Tensor      # 0-d long: the accepted prefix's length n
    last: torch.Tensor            # 0-d long: the resampled (n < gamma) or bonus (n = gamma) token
    draft_tokens: torch.Tensor    # [gamma] long: the drafted tokens, as given
    uniforms: torch.Tensor        # [gamma + V] the round's uniforms, as given
    accept_probs: torch.Tensor    # [gamma] the accept chance of each drafted token
    drafted_target_probs: torch.Tensor  # [gamma] p(x_i)
    drafted_draft_probs: torch.Tensor   # [gamma] q(x_i)
    candidates: torch.Tensor      # [gamma+1, V] unnormalised: the correction at each drafted position, then p's next row
    drafted_kl: torch.Tensor | None = None  # [gamma] mentored: KL(target || output) per position
    followed: torch.Tensor | None = None    # [gamma] bool: decided by a followed text (`follow_round`): x_i is its token

    @property
    def accepted(self) -> torch.Tensor:
        """[gamma] bool: u_i < accept chance (a followed text's token is x_i), at every position (examined or not)."""
        if self.followed is not None:
            return self.followed
        return self.uniforms[..., : self.accept_probs.shape[-1]] < self.accept_probs

    @property
    def tokens(self) -> torch.Tensor:
        """[gamma+1] long: the n accepted drafts, the last token, then NO_TOKEN."""
        gamma = self.draft_tokens.shape[-1]
        positions = torch.arange(gamma + 1, device=self.draft_tokens.device)
        n, last = self.n_accepted.unsqueeze(-1), self.last.unsqueeze(-1)
        drafted = torch.cat([self.draft_tokens, torch.full_like(self.draft_tokens[..., :1], NO_TOKEN)], -1)
        return torch.where(positions < n, drafted, torch.where(positions == n, last, NO_TOKEN))

    @property
    def final_probs(self) -> torch.Tensor:
        """[V] the distribution the last token was drawn from: candidates' row n, normalised."""
        return _normalised(_row(self.candidates, self.n_accepted))


def _row(rows: torch.Tensor, n: torch.Tensor) -> torch.Tensor:
    """rows [..., R, V] at [...] row indices n: [..., V]."""
    return rows.gather(-2, n[..., None, None].expand(*n.shape, 1, rows.shape[-1])).squeeze(-2)


def _normalised(weights: torch.Tensor) -> torch.Tensor:
    return weights / weights.sum(-1, keepdim=True)


def verify_round(target_probs: torch.Tensor, draft_probs: torch.Tensor, draft_tokens: torch.Tensor,
                 uniforms: torch.Tensor, *, kl_budget: float = 0.0, plan: MentoredPlan | None = None) -> Round:
    """Speculative sampling's verify and correct (Leviathan et al. Alg. 1 = Chen et al. Alg. 2), vectorised
    over the positions as vLLM's rejection sampler and transformers' `_speculative_sampling` do.

    target_probs [gamma+1, V], draft_probs [gamma, V], draft_tokens [gamma] (a LongTensor on their device),
    uniforms [gamma + V] float64 (`round_uniforms`): u_i against the accept chances, then V for the exponential race
    that draws the last token from the unnormalised residual max(0, p - q) or p's next row (`race`). Leading
    dimensions [...] before each make it a batch of independent rounds decided in one call (the tests draw tens of
    thousands of rounds so). Values are trusted (checking them is a host read: `verify` does it); shapes are
    checked. kl_budget > 0 is mentored decoding through its plan (Tran-Thien 2023), whose bisection runs on the
    host; pass `plan` to reuse one computed for target_probs[..., :gamma, :] (a plan of one round's [gamma, V] rows
    serves a batch of rounds on those rows). A handful of operations, none reading back to the host.
    """
    shape = draft_probs.shape
    batch, (gamma, vocab) = shape[:-2], shape[-2:]
    if tuple(target_probs.shape) != (*batch, gamma + 1, vocab) or tuple(draft_tokens.shape) != (*batch, gamma) \
            or tuple(uniforms.shape) != (*batch, gamma + vocab):
        raise ValueError(f"verify_round wants target_probs [{gamma + 1}, {vocab}], draft_tokens [{gamma}] and "
                         f"uniforms [{gamma + vocab}] (after the same leading dimensions as draft_probs), got "
                         f"{tuple(target_probs.shape)}, {tuple(draft_tokens.shape)} and {tuple(uniforms.shape)}")
    index = draft_tokens.unsqueeze(-1)                                             # [..., gamma, 1]
    drafted_rows = target_probs[..., :gamma, :]                                    # [..., gamma, V]
    drafted_p = drafted_rows.gather(-1, index).squeeze(-1)                         # [..., gamma]
    drafted_q = draft_probs.gather(-1, index).squeeze(-1)                          # [..., gamma]
    if kl_budget > 0 and plan is None:
        plan = mentored_plan(drafted_rows, draft_probs, kl_budget)
    if plan is not None:
        accept = plan.accept_probs.expand(*batch, gamma, vocab).gather(-1, index).squeeze(-1)  # [..., gamma]
        corrections = plan.resample_probs.expand(*batch, gamma, vocab)            # [..., gamma, V]
    else:
        accept = torch.clamp(drafted_p / drafted_q, max=1.0)                       # [..., gamma] min(1, p/q)
        residual = torch.clamp(drafted_rows - draft_probs, min=0)                  # [..., gamma, V] max(0, p - q)
        # where p <= q everywhere (p == q up to rounding) no rejection can happen; p keeps the race defined
        corrections = torch.where(residual.any(-1, keepdim=True), residual, drafted_rows)
    # 2. verify: strict u_i < chance, so a token with accept chance 0 is never kept; n = the accepted prefix
    n = (uniforms[..., :gamma] < accept).cumprod(-1).sum(-1)                      # [...]
    # 3. correct: the residual at each position, p's next row for the bonus (torch.cat promotes to the wider dtype)
    candidates = torch.cat([corrections, target_probs[..., gamma:, :]], -2)       # [..., gamma+1, V]
    # every row raced with the same V uniforms (only row n's token is kept: one fresh race), row n's token kept;
    # unchecked: valid rows (checked by `verify` or the round's read) always leave row n some mass
    raced = race(candidates, race_keys(uniforms[..., None, gamma:]), checked=False)  # [..., gamma+1]
    last = raced.gather(-1, n.unsqueeze(-1)).squeeze(-1)                           # [...]
    return Round(n_accepted=n, last=last, draft_tokens=draft_tokens, uniforms=uniforms, accept_probs=accept,
                 drafted_target_probs=drafted_p, drafted_draft_probs=drafted_q, candidates=candidates,
                 drafted_kl=_batched_kl(plan, batch, gamma))


def follow_round(decided: Round, text: torch.Tensor) -> Round:
    """A round `verify_round` decided, decided again by a text drawn from the target, for a draft proposed with
    certainty (q one-hot at each x_i: prompt lookup): `text` [..., gamma+1] holds its tokens y_0..y_gamma at the
    round's positions. x_i is kept while it is y_i; the last token is y_n. The same law (Leviathan et al. 2023,
    Alg. 1, at q one-hot): the exact rule keeps x_i with chance min(1, p(x_i)/1) = p(x_i) and at a rejection draws
    from norm(max(0, p - q)), p without x_i; y_i ~ p is x_i with chance p(x_i) and otherwise a draw from p without
    x_i. The uniforms and the race were still drawn (a bench times what a sampled round costs), their decision set
    aside. So rules that follow one text emit that text, each with its own rounds and costs: a bench's common random
    numbers (`bench --same-texts`). Another q is not certain: this rule would not be its law."""
    gamma = decided.draft_tokens.shape[-1]
    same = decided.draft_tokens == text[..., :gamma]                               # [..., gamma]
    n = same.cumprod(-1).sum(-1)                                                   # [...] the text's prefix
    last = text.gather(-1, n.unsqueeze(-1)).squeeze(-1)                            # [...] y_n
    return dataclasses.replace(decided, n_accepted=n, last=last, followed=same)


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


def pack(layout: tuple | None = None, **tensors: torch.Tensor) -> Packed:
    """Everything a round's trace and counters need, as one tensor for a single host read (`.read()`): one
    concatenation of the tensors flattened. `layout`: a `Packed.layout` of the same names and shapes from an earlier
    round, so that a round of a shape seen before reads no tensor's shape or dtype, and flattens only what is not
    already one-dimensional."""
    if layout is None:
        layout = tuple((name, tuple(t.shape), not (t.dtype.is_floating_point or t.dtype.is_complex))
                       for name, t in tensors.items())
    flat = torch.cat([t if len(shape) == 1 else t.reshape(-1) for t, (_, shape, _) in zip(tensors.values(), layout)])
    return Packed(flat=flat.to(torch.float64), layout=layout)


def _nest(values: list, shape: tuple[int, ...]):
    if not shape:
        return values[0]
    if len(shape) == 1:
        return values
    step = len(values) // shape[0] if shape[0] else 0
    return [_nest(values[i * step:(i + 1) * step], shape[1:]) for i in range(shape[0])]
