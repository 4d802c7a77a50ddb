"""Prompt lookup (n-gram) drafting: a draft that is not a model.

The proposal is the tokens that followed the latest earlier occurrence of the context's last n tokens,
trying n from the largest size down to the smallest (transformers' `PromptLookupCandidateGenerator`,
`prompt_lookup_num_tokens`; vLLM's `ngram` method; Saxena, "Prompt Lookup Decoding", 2023). It is a
deterministic function of the context, so its draft law q is a point mass on the proposed token:
the accept chance min(1, p(x) / q(x)) is p(x), and the residual norm(max(0, p - q)) is p without x,
renormalised. The output law is the target's (Leviathan et al. 2023, Appendix A.1, holds for any q).
Pure: token ids in, a proposal out.
"""
from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class LookupProposal:
    """What the lookup proposed: `tokens` (0..gamma of them) copied from `context[start:start + len(tokens)]`,
    which followed the matched n-gram `context[start - ngram:start]`; ngram 0 and no tokens: no match."""
    tokens: list[int]
    start: int = 0
    ngram: int = 0

    @property
    def matched(self) -> bool:
        return bool(self.tokens)


def propose(context: Sequence[int], gamma: int, max_ngram: int, min_ngram: int = 1,
            searchable: int | None = None, never: Collection[int] = ()) -> LookupProposal:
    """Up to `gamma` tokens that followed the latest earlier occurrence of the last n tokens of `context`,
    n = max_ngram, ..., min_ngram (the first n with a match wins). A match near the end proposes only the
    tokens that exist after it (fewer than gamma). `searchable`: only occurrences whose continuation starts
    inside context[:searchable] count, and the copy stops there (the prompt, for "look in the prompt only").
    `never`: tokens never copied (a chat template's control tokens, such as <|im_start|>, which follow its
    newlines): a match whose continuation starts with one is passed over, and a copy stops before one."""
    context, never = list(context), set(never)
    length = len(context)
    limit = length if searchable is None else min(searchable, length)
    for n in range(min(max_ngram, length - 1), max(min_ngram, 1) - 1, -1):
        tail = context[-n:]
        # where the continuation would start, latest first; it must hold a token (start < limit <= length,
        # which also skips the tail itself, whose continuation would start at `length`)
        for start in range(limit - 1, n - 1, -1):
            if context[start - n:start] == tail and context[start] not in never:
                end = min(start + gamma, limit)
                end = next((i for i in range(start, end) if context[i] in never), end)
                return LookupProposal(tokens=context[start:end], start=start, ngram=n)
    return LookupProposal(tokens=[])


def one_hot_draft(tokens: Sequence[int], vocab: int, like: torch.Tensor) -> torch.Tensor:
    """q for a proposal: [len(tokens), V] rows with all mass on the proposed token, `like`'s dtype and device."""
    q = torch.zeros(len(tokens), vocab, dtype=like.dtype, device=like.device)  # [k, V]
    if len(tokens):
        q[torch.arange(len(tokens), device=like.device), torch.as_tensor(list(tokens), device=like.device)] = 1.0
    return q
