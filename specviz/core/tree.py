"""Several drafts at once: exact multi-draft speculative sampling over a token tree, as pure functions.

The rule (SpecInfer's multi-step speculative sampling, Miao et al., ASPLOS 2024, arXiv:2305.09781,
for k chains drawn independently from one draft): at each depth the candidates are the next tokens
of the chains that agree with everything accepted so far. Try them in a random order: accept x with
chance min(1, p(x)/q(x)); after a rejection replace p by the residual norm(max(0, p - q)) and judge
the next candidate against that new p. One accepted: go a level deeper. All rejected: draw the
correction from the current (residual) p and stop. After the last level, a bonus token from the target.

Why it is exact (the first emitted token; deeper levels repeat it on the surviving chains, whose next
tokens are again i.i.d. draft samples, whatever was decided above them): let p_0 = p and
p_{j+1} = norm(max(0, p_j - q)). One try X ~ q judged against p_j emits x with chance
q(x) min(1, p_j(x)/q(x)) = min(p_j, q)(x) and passes on with chance sum max(0, p_j - q); if what
follows emits p_{j+1}, the whole emits min(p_j, q) + max(0, p_j - q) = p_j. With no try left the
correction is drawn from p_j itself, so by induction k tries emit p_0 = p. The residual does not depend
on which token was rejected, so the chance all k tries fail is prod_j TV(p_j, q) (`level_acceptance`).

Each candidate is a *sample*: two chains that drafted the same token are two tries. The second try of
a rejected token is a sure rejection (its residual mass is 0), yet it moves p one residual further, and
the correction is drawn from there. `merge_identical` tries each distinct token once, in a random order
of the distinct tokens: its output leaves p wherever a residual still overlaps q (and from k = 3 even
when p = q, since the first token tried is then no longer a draft sample). tests/core/test_tree.py
enumerates both.
k = 1 is `sampling.verify`, draw for draw.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import torch

from .config import DRAFTS_MAX, DRAFTS_MIN
from .sampling import accept_probability, check_probs, race, race_keys, residual_distribution, tv_distance


@dataclass(frozen=True)
class Try:
    """One candidate judged at one depth."""
    depth: int
    rank: int                 # 0 = tried first at this depth
    chain: int                # the chain that drafted it (merge_identical: the first chain with this token)
    token: int
    target_prob: float        # the *current* p(x): after the residual updates of earlier rejections here
    draft_prob: float         # q(x)
    accept_prob: float        # min(1, current p(x) / q(x))
    uniform: float
    accepted: bool
    residual: torch.Tensor | None = None  # [V] rejected: the p the next candidate is judged against


@dataclass(frozen=True)
class Level:
    """What one depth decided: the tries in order, the token kept (None: all rejected), the final p."""
    tries: list[Try]
    token: int | None
    probs: torch.Tensor       # [V] p after the last rejection here (the correction's law when token is None)


@dataclass(frozen=True)
class TreeVerification:
    n_accepted: int
    tokens: list[int]         # accepted drafts, then exactly one resampled or bonus token
    levels: list[Level]       # one per examined depth
    final_probs: torch.Tensor  # [V] the distribution the last token was drawn from
    path_chain: int           # a chain that agrees with every accepted token (whose cache rows to keep)
    alive: list[list[int]] = field(default_factory=list)  # per examined depth: the chains still agreeing

    @property
    def bonus(self) -> bool:
        return self.n_accepted == len(self.levels)

    @property
    def n_examined(self) -> int:
        return len(self.levels)

    @property
    def tries(self) -> list[Try]:
        return [t for level in self.levels for t in level.tries]


def judge_level(target_probs: torch.Tensor, draft_probs: torch.Tensor, candidates: list[int],
                uniforms: torch.Tensor, *, depth: int = 0, chains: list[int] | None = None) -> Level:
    """One depth of the rule, deterministic given the uniforms: try `candidates` in the given order.

    target_probs, draft_probs [V]; uniforms [>= len(candidates)]. Stops at the first acceptance."""
    p, q = target_probs, draft_probs
    chains = list(range(len(candidates))) if chains is None else chains
    tries = []
    for rank, (chain, x) in enumerate(zip(chains, candidates)):
        # 1. the accept chance of x under the current p
        token = torch.tensor([x], device=q.device)
        chance = accept_probability(p[None], q[None], token)[0]
        u = uniforms[rank]
        accepted = bool(u < chance)  # strict, as in sampling.verify: chance 0 is never kept
        # 2. a rejection replaces p by the residual the next candidate is judged against
        residual = None if accepted else residual_distribution(p, q)
        values = torch.cat([torch.stack([p[x], q[x], chance]).double(), u.double().reshape(1)]).tolist()  # one read
        tries.append(Try(depth=depth, rank=rank, chain=chain, token=int(x), target_prob=values[0],
                         draft_prob=values[1], accept_prob=values[2], uniform=values[3], accepted=accepted,
                         residual=residual))
        if accepted:
            return Level(tries=tries, token=int(x), probs=p)
        p = residual
    return Level(tries=tries, token=None, probs=p)


def _check(target_probs: torch.Tensor, draft_probs: torch.Tensor, draft_tokens: torch.Tensor) -> torch.Tensor:
    if not isinstance(draft_probs, torch.Tensor) or draft_probs.dim() != 3 or draft_probs.shape[1] < 1:
        raise ValueError(f"draft_probs must be [k, gamma, V] with gamma >= 1, got {getattr(draft_probs, 'shape', None)}")
    k, gamma, vocab = draft_probs.shape
    if not DRAFTS_MIN <= k <= DRAFTS_MAX:
        raise ValueError(f"drafts (k) must be in {DRAFTS_MIN}..{DRAFTS_MAX}, got {k}")
    check_probs("target_probs", target_probs)
    check_probs("draft_probs", draft_probs)
    if tuple(target_probs.shape) != (k, gamma + 1, vocab):
        raise ValueError(f"target_probs must be [k, gamma+1, V] = [{k}, {gamma + 1}, {vocab}], "
                         f"got {tuple(target_probs.shape)}")
    draft_tokens = torch.as_tensor(draft_tokens, device=draft_probs.device)
    if draft_tokens.shape != (k, gamma) or draft_tokens.dtype.is_floating_point:
        raise ValueError(f"draft_tokens must be [k, gamma] = [{k}, {gamma}] integer ids, got {tuple(draft_tokens.shape)}")
    if ((draft_tokens < 0) | (draft_tokens >= vocab)).any():
        raise ValueError(f"draft_tokens must lie in [0, {vocab})")
    if (draft_probs.gather(-1, draft_tokens.unsqueeze(-1)) <= 0).any():
        raise ValueError("a draft token has zero draft probability: it cannot have been sampled from draft_probs")
    return draft_tokens


def verify_tree(target_probs: torch.Tensor, draft_probs: torch.Tensor, draft_tokens: torch.Tensor, *,
                generator: torch.Generator | None = None, merge_identical: bool = False) -> TreeVerification:
    """One round of multi-draft speculative sampling over k chains.

    target_probs [k, gamma+1, V]: the target's distribution after each chain's first d tokens (rows of
                                  chains that share those d tokens are the same tree node).
    draft_probs  [k, gamma, V]:   the draft's distribution each chain's token at depth d was drawn from.
    draft_tokens [k, gamma]:      the chains.
    merge_identical: the biased shortcut (each distinct token tried once), for teaching only.
    """
    draft_tokens = _check(target_probs, draft_probs, draft_tokens)
    k, gamma, vocab = draft_probs.shape
    chains = draft_tokens.tolist()
    # 1. every uniform up front: [k, gamma] against the accept chances, then V for the last token's exponential race
    # (k = 1: the same draws as sampling.verify's gamma + V)
    drawn = torch.rand(k * gamma + vocab, generator=generator, device=draft_probs.device, dtype=torch.float64)
    uniforms, keys = drawn[: k * gamma].reshape(k, gamma), race_keys(drawn[k * gamma:])
    alive, accepted, levels, alive_log = list(range(k)), [], [], []
    for depth in range(gamma):
        # 2. the candidates here: the surviving chains' next tokens, in a random order
        alive_log.append(list(alive))
        order = _random_order(alive, chains, depth, merge_identical, generator)
        node = alive[0]  # every surviving chain sits at the same tree node
        level = judge_level(target_probs[node, depth], draft_probs[node, depth], [chains[i][depth] for i in order],
                            uniforms[:, depth], depth=depth, chains=order)
        levels.append(level)
        if level.token is None:
            # 3. all rejected: the correction comes from the current residual
            last = int(race(level.probs, keys))
            return TreeVerification(n_accepted=depth, tokens=accepted + [last], levels=levels,
                                    final_probs=level.probs, path_chain=node, alive=alive_log)
        accepted.append(level.token)
        alive = [i for i in alive if chains[i][depth] == level.token]
    # 4. every level accepted: the bonus token from the target after the accepted path
    final = target_probs[alive[0], gamma]
    last = int(race(final, keys))
    return TreeVerification(n_accepted=gamma, tokens=accepted + [last], levels=levels, final_probs=final,
                            path_chain=alive[0], alive=alive_log)


def _random_order(alive: list[int], chains: list[list[int]], depth: int, merge_identical: bool,
                  generator: torch.Generator | None) -> list[int]:
    """The chains to try at this depth, in a uniformly random order (one per distinct token when merging)."""
    pool = alive
    if merge_identical:
        firsts = {}
        for i in alive:
            firsts.setdefault(chains[i][depth], i)
        pool = list(firsts.values())
    if len(pool) == 1:
        return list(pool)  # no draw: k = 1 consumes exactly sampling.verify's random numbers
    device = generator.device if generator is not None else "cpu"
    return [pool[i] for i in torch.randperm(len(pool), generator=generator, device=device).tolist()]


def residual_chain(target_probs: torch.Tensor, draft_probs: torch.Tensor, k: int) -> list[torch.Tensor]:
    """[p_0, ..., p_k]: p_0 = p and p_{j+1} = norm(max(0, p_j - q)), each [V]."""
    out = [target_probs]
    for _ in range(k):
        out.append(residual_distribution(out[-1], draft_probs))
    return out


def level_acceptance(target_probs: torch.Tensor, draft_probs: torch.Tensor, k: int) -> float:
    """The chance that one level with k i.i.d. candidates accepts one: 1 - prod_{j<k} TV(p_j, q).

    Closed form: the j-th try fails with chance 1 - sum min(p_j, q) = TV(p_j, q) whichever token it
    drew, since p_j does not depend on the rejected tokens. k = 1 gives sum min(p, q) = 1 - TV."""
    failed = 1.0
    for p_j in residual_chain(target_probs, draft_probs, k)[:k]:
        failed *= float(tv_distance(p_j, draft_probs))
    return 1.0 - failed
