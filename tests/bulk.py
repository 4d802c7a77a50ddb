"""Rounds in bulk: tens of thousands of speculative rounds decided in one vectorised call of the decision code.

The law tests check `sampling.verify_round` (the code every decoder's round goes through) on known p and q rows
instead of running a decoder thousands of times: the drafts are drawn here from q by their own inverse CDF
(numpy's searchsorted, not the library's sampler), each round's gamma + V uniforms (gamma against the accept
chances, V for the exponential race of the last token) from one seeded torch.Generator, and one call decides every
round. Context-dependent laws (the emitted sequence over several rounds) use tables of rows indexed
by the prefix, advanced round by round for every unfinished sample at once.
"""
from __future__ import annotations

import itertools

import numpy as np
import torch

from specviz.core.sampling import NO_TOKEN, verify_round


def draw(rows: torch.Tensor, uniforms: torch.Tensor) -> torch.Tensor:
    """Tokens from [n, V] rows (or one [V] row for all) at [n] uniforms by inverse CDF, written apart from the
    library's sampler: numpy's cumulative sum in float64 and the first index whose CDF exceeds u times the total."""
    u = uniforms.double().cpu().numpy()
    if rows.dim() == 1:                                          # one row: its CDF once, then a binary search
        cdf = np.cumsum(rows.double().cpu().numpy())
        index = np.searchsorted(cdf, u * cdf[-1], side="right")
    else:
        cdf = np.cumsum(rows.double().cpu().numpy(), axis=-1)
        index = (cdf <= u[:, None] * cdf[:, -1:]).sum(-1)        # tokens of CDF <= u lie before the draw
    return torch.from_numpy(np.minimum(index, rows.shape[-1] - 1)).long()


def rounds(target: torch.Tensor, draft: torch.Tensor, n: int, seed: int, **verify_kwargs):
    """`n` independent rounds on fixed rows: target [gamma+1, V], draft [gamma, V] (each drafted token drawn
    from its own row). Returns `verify_round`'s Round with a leading [n] dimension."""
    gen = torch.Generator().manual_seed(seed)
    gamma = draft.shape[0]
    u = torch.rand(n, gamma, generator=gen, dtype=torch.float64)
    drafts = torch.stack([draw(draft[i], u[:, i]) for i in range(gamma)], -1)                        # [n, gamma]
    uniforms = torch.rand(n, gamma + target.shape[-1], generator=gen, dtype=torch.float64)           # [n, gamma+V]
    return verify_round(target.expand(n, -1, -1), draft.expand(n, -1, -1), drafts, uniforms, **verify_kwargs)


def first_tokens(target: torch.Tensor, draft: torch.Tensor, n: int, seed: int, chunk: int = 200_000,
                 **verify_kwargs) -> np.ndarray:
    """Counts [V] of the first emitted token of `n` rounds (`rounds`), decided `chunk` rounds a call (a round holds
    a few rows of V entries and V uniforms: a model's vocabulary of thousands wants chunks of a thousand rounds)."""
    counts = np.zeros(target.shape[-1], dtype=np.int64)
    for i, start in enumerate(range(0, n, chunk)):
        out = rounds(target, draft, min(chunk, n - start), seed * 1_000 + i, **verify_kwargs)
        counts += np.bincount(out.tokens[..., 0].cpu().numpy(), minlength=target.shape[-1])
    return counts


class PrefixTables:
    """Target and draft rows for every prefix up to a length, over a small vocabulary: row(prefix) is the
    distribution of the next token. Prefixes are stored by (length, base-V code) so a batch looks them up at once."""

    def __init__(self, target_rows: dict[tuple, torch.Tensor], draft_rows: dict[tuple, torch.Tensor], vocab: int):
        self.vocab = vocab
        self.longest = max(len(k) for k in target_rows)
        self.offsets = [sum(vocab ** m for m in range(length)) for length in range(self.longest + 2)]
        order = [pre for length in range(self.longest + 1) for pre in itertools.product(range(vocab), repeat=length)]
        self.target = torch.stack([target_rows[pre] for pre in order]).double()   # [prefixes, V]
        self.draft = torch.stack([draft_rows[pre] for pre in order]).double()     # [prefixes, V]

    def index(self, codes: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        """Row numbers of prefixes given as base-V codes (first token most significant) and lengths."""
        return torch.tensor(self.offsets, dtype=torch.long)[lengths] + codes

    def law(self, sequence: tuple[int, ...]) -> float:
        """The target chain's probability of `sequence`: the product of its conditionals."""
        mass, code = 1.0, 0
        for length, token in enumerate(sequence):
            mass *= float(self.target[self.offsets[length] + code, token])
            code = code * self.vocab + token
        return mass


def emitted_sequences(tables: PrefixTables, gamma: int, horizon: int, n: int, seed: int, go_on=None,
                      drafted: list | None = None, planted_drop: bool = False) -> np.ndarray:
    """Counts over the V**horizon sequences of the first `horizon` tokens that speculative rounds emit, `n`
    samples advanced round by round together: each round drafts gamma tokens from the draft's rows after the
    sample's prefix, verifies them against the target's rows in one `verify_round` call for the whole batch.

    `go_on(confidences) -> bool`, where given: after each drafted token, whether that sample's round drafts another
    (gamma auto: `confidences` are the draft's probabilities of the tokens this round drew so far, a tuple); the
    samples are then verified in groups of one drafted length. `drafted`: a list the rounds' drafted lengths go to.
    `planted_drop`: PLANTED, a rule that drops the token it stopped on (past the first), as a copied `p_min` would."""
    gen = torch.Generator().manual_seed(seed)
    vocab = tables.vocab
    codes = torch.zeros(n, dtype=torch.long)      # the emitted prefix, base V
    lengths = torch.zeros(n, dtype=torch.long)
    while (lengths < horizon).any():
        live = (lengths < horizon).nonzero().squeeze(-1)
        code, length = codes[live], lengths[live]
        p_rows, q_rows, drafts, confidences = [], [], [], []
        going = torch.ones(len(live), dtype=torch.bool)
        k = torch.full((len(live),), gamma, dtype=torch.long)   # each sample's drafted length this round
        for i in range(gamma + 1):                # 1. draft, with the rows each position is judged by
            row = tables.index(code, length + i)
            p_rows.append(tables.target[row])
            if i == gamma:
                break
            q_rows.append(tables.draft[row])
            token = draw(q_rows[-1], torch.rand(len(live), generator=gen, dtype=torch.float64))
            drafts.append(token)
            confidences.append(q_rows[-1].gather(1, token[:, None])[:, 0])
            code = code * vocab + token
            if go_on is not None and i < gamma - 1:  # the rule, for the samples still drafting
                asked = going.nonzero().squeeze(-1)
                history = torch.stack(confidences, 1)[asked].tolist()
                stop = asked[torch.tensor([not go_on(tuple(h)) for h in history], dtype=torch.bool)]
                going[stop], k[stop] = False, max(i, 1) if planted_drop else i + 1
        uniforms = torch.rand(len(live), gamma + vocab, generator=gen, dtype=torch.float64)
        p_all, q_all, d_all = torch.stack(p_rows, 1), torch.stack(q_rows, 1), torch.stack(drafts, 1)
        emitted = torch.full((len(live), gamma + 1), NO_TOKEN, dtype=torch.long)  # [live, gamma+1], NO_TOKEN after
        for size in k.unique().tolist():          # 2. verify each drafted length's samples in one call
            group = (k == size).nonzero().squeeze(-1)
            out = verify_round(p_all[group, : size + 1], q_all[group, :size], d_all[group, :size],
                               torch.cat([uniforms[group, :size], uniforms[group, gamma:]], 1))
            emitted[group, : size + 1] = out.tokens
        if drafted is not None:
            drafted += k.tolist()
        for j in range(gamma + 1):                 # 3. append what the round emitted, up to the horizon
            take = (emitted[:, j] != NO_TOKEN) & (lengths[live] < horizon)
            rows = live[take]
            codes[rows] = codes[rows] * vocab + emitted[take, j]
            lengths[rows] += 1
    return np.bincount(codes.numpy(), minlength=vocab ** horizon)
