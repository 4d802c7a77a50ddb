"""Prompt lookup as a drafter (`core.lookup`): no draft model runs.

Up to gamma tokens copied after the latest earlier occurrence of the last n tokens; q is a point mass on each
proposed token (the proposal is a function of the context), so the exact rule accepts token x with chance
min(1, p(x)/1) = p(x), and after a rejection the residual norm(max(0, p - q)) is p without x, renormalised.
With no earlier match nothing is proposed and the round is one target pass: a token drawn from p, as in
target-only decoding. The output law is exactly the target's (Leviathan et al. 2023, Appendix A.1: any q).

The proposal is made on the host (a search over the token ids the host already holds), and its ids go to the
device once per round.
"""
from __future__ import annotations

import copy
from dataclasses import asdict, replace

import torch

from ...core import lookup
from ...core.draft_length import DraftStop
from ...core.trace import LookupTrace
from .drafting import Drafted, ModelFreeDrafter, TokenContext

LOOKUP_SOURCE = "lookup"  # its keep table's name in a draft length rule (core.draft_length)
TABLE_WEIGHT = 2  # with gamma auto: the keep table's chance for a match length counts as this many copies seen
CONTEXT_SHOWN = 6  # tokens shown before the matched n-gram on the card
AFTER_SHOWN = 3    # and after the copied ones


def never_copied(pair) -> frozenset[int]:
    """The pair's special tokens (a chat template's <|im_start|>, <|im_end|>, ...): the lookup never copies one."""
    return frozenset(getattr(pair.tokenizer, "all_special_ids", None) or ())


def in_template_header(pair, context: TokenContext) -> bool:
    """The answer's first round of a chat prompt: its last tokens are the template's "<|im_start|>assistant\n",
    whose newline matches the user turn's, so a lookup would copy the question's first word as the answer's.
    Nothing is looked up then (a base model's prompt, with no special token, is text to continue: it may be)."""
    return len(context.ids) <= context.n_prompt and bool(never_copied(pair) & set(context.ids))


class PromptLookup(ModelFreeDrafter):
    """Drafts copied from the context (config.lookup_max_ngram .. lookup_min_ngram, config.lookup_source).

    With gamma auto it also learns from this text's own copies: `copies` counts, per match length n, how often a
    copy's first token was kept ("first") and how often a token after a kept one was ("next"). The text shows it: a
    rejected copy is replaced by a draw from the residual norm(max(0, p - q)), which gives the copied token no mass
    (q is a point mass on it), so a copy was kept exactly as far as the text agrees with it."""

    def __init__(self, *args):
        super().__init__(*args)
        self.copies: dict[tuple[str, int], tuple[int, int]] = {}  # ("first" | "next", n) -> (kept, tried)
        self.last_copy: tuple[int, list[int], int] | None = None  # (position, tokens, n) of the last proposal

    @classmethod
    def verify_sizes(cls, gamma: int) -> list[int]:
        return list(range(1, gamma + 2))  # the pending token and 0..gamma proposed ones

    def propose(self, context: TokenContext, gamma: int) -> Drafted:
        """The lookup's proposal (0..gamma tokens); q is a point mass on each, built on the device when needed."""
        config = self.config
        self.learn(context)
        searchable = context.n_prompt if config.lookup_source == "prompt" else None
        proposal = lookup.LookupProposal(tokens=[]) if in_template_header(self.pair, context) else \
            lookup.propose(context.ids, gamma, config.lookup_max_ngram, config.lookup_min_ngram, searchable,
                           never_copied(self.pair))
        proposal, stop = self.cut(proposal)
        if stop is not None and proposal.tokens:  # gamma auto: the next round's text shows how far it was kept
            self.last_copy = (len(context.ids), list(proposal.tokens), proposal.ngram)
        tokens = torch.tensor(proposal.tokens, dtype=torch.long).to(self.pair.device)  # [k]: one copy to the device
        return Drafted(tokens=tokens, probs=None, detail=asdict(self._where(proposal, context)), stop=stop)

    def learn(self, context: TokenContext) -> None:
        """How far the last proposal was kept, read from the text once it holds the round's tokens: the first token
        counts as a "first" try, each later token whose predecessors were all kept as a "next" one."""
        if self.last_copy is None or len(context.ids) <= self.last_copy[0]:
            return
        position, tokens, n = self.last_copy
        kept = 0
        while kept < len(tokens) and position + kept < len(context.ids) and context.ids[position + kept] == tokens[kept]:
            kept += 1
        self._count(("first", n), kept >= 1)
        for j in range(1, min(kept + 1, len(tokens))):  # token j was tried: all before it were kept
            self._count(("next", n), j < kept)
        self.last_copy = None

    def _count(self, key: tuple[str, int], kept: bool) -> None:
        done, tried = self.copies.get(key, (0, 0))
        self.copies[key] = (done + kept, tried + 1)

    def chance(self, kind: str, ngram: int) -> float:
        """The keep chance of a copied token after an n-token match, `kind` "first" or "next": the lookup's keep
        table (a token copied after a longer match is copied from a likelier place: confidence n /
        lookup_max_ngram), weighed as TABLE_WEIGHT copies, then this text's own copies (a table measured mostly on
        text made to be copied is too hopeful for free text: docs/benchmarks.md)."""
        table = self.config.draft_length.table(LOOKUP_SOURCE).chance(ngram / self.config.lookup_max_ngram)
        kept, tried = self.copies.get((kind, ngram), (0, 0))
        return (TABLE_WEIGHT * table + kept) / (TABLE_WEIGHT + tried)

    def cut(self, proposal: lookup.LookupProposal) -> tuple[lookup.LookupProposal, DraftStop | None]:
        """With gamma auto, the copy cut where the rule stops (core.draft_length), each copied token kept with the
        chance `chance` gives (its first token's, then a following token's); the copy running out first is the
        stop's reason "copy"."""
        rule = self.config.draft_length
        if rule is None:
            return proposal, None
        stopper = rule.start(LOOKUP_SOURCE, runs_a_model=False)  # a copy costs no draft forward
        confidence = proposal.ngram / self.config.lookup_max_ngram
        first, following = self.chance("first", proposal.ngram), self.chance("next", proposal.ngram)
        kept, stopped = 0, False
        while kept < len(proposal.tokens) and not stopped:
            kept += 1
            stopped = not stopper.go_on(confidence, first if kept == 1 else following, ahead=following)
        reason = None if stopped else "copy" if kept else "none"
        return replace(proposal, tokens=proposal.tokens[:kept]), stopper.record(reason)

    def learned(self) -> dict:
        """The tallies and the last proposal, as plain JSON data."""
        return {"copies": [[kind, n, kept, tried] for (kind, n), (kept, tried) in sorted(self.copies.items())],
                "last_copy": None if self.last_copy is None else [self.last_copy[0], list(self.last_copy[1]),
                                                                  self.last_copy[2]]}

    def relearn(self, learned: dict) -> None:
        self.copies = {(kind, int(n)): (int(kept), int(tried)) for kind, n, kept, tried in learned.get("copies", ())}
        last = learned.get("last_copy")
        self.last_copy = None if last is None else (int(last[0]), [int(t) for t in last[1]], int(last[2]))

    def fork(self, target, generator) -> PromptLookup:
        twin = copy.copy(self)  # learns on its own from here (a race's other side, a what-if's replay)
        twin.copies = dict(self.copies)
        return twin

    def _where(self, proposal: lookup.LookupProposal, context: TokenContext) -> LookupTrace:
        """Where this round's proposal stands in the context it was copied from."""
        texts, searched = self.pair.token_text, self.config.lookup_source
        if not proposal.matched:
            return LookupTrace(ngram=0, searched=searched)
        start, n, k = proposal.start, proposal.ngram, len(proposal.tokens)

        def shown(lo: int, hi: int) -> list[str]:
            return [texts(x) for x in context.ids[max(lo, 0): hi]]

        return LookupTrace(ngram=n, start=start, in_prompt=start < context.n_prompt,
                           before=shown(start - n - CONTEXT_SHOWN, start - n), matched=shown(start - n, start),
                           copied=shown(start, start + k), after=shown(start + k, start + k + AFTER_SHOWN),
                           searched=searched)

