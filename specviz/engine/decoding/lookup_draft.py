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

from dataclasses import asdict, replace

import torch

from ...core import lookup
from ...core.draft_length import DraftStop
from ...core.trace import LookupTrace
from .drafting import Drafted, ModelFreeDrafter, TokenContext

LOOKUP_SOURCE = "lookup"  # its keep table's name in a draft length rule (core.draft_length)
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
    """Drafts copied from the context (config.lookup_max_ngram .. lookup_min_ngram, config.lookup_source)."""

    @classmethod
    def verify_sizes(cls, gamma: int) -> list[int]:
        return list(range(1, gamma + 2))  # the pending token and 0..gamma proposed ones

    def propose(self, context: TokenContext, gamma: int) -> Drafted:
        """The lookup's proposal (0..gamma tokens); q is a point mass on each, built on the device when needed."""
        config = self.config
        searchable = context.n_prompt if config.lookup_source == "prompt" else None
        proposal = lookup.LookupProposal(tokens=[]) if in_template_header(self.pair, context) else \
            lookup.propose(context.ids, gamma, config.lookup_max_ngram, config.lookup_min_ngram, searchable,
                           never_copied(self.pair))
        proposal, stop = self.cut(proposal)
        tokens = torch.tensor(proposal.tokens, dtype=torch.long).to(self.pair.device)  # [k]: one copy to the device
        return Drafted(tokens=tokens, probs=None, detail=asdict(self._where(proposal, context)), stop=stop)

    def cut(self, proposal: lookup.LookupProposal) -> tuple[lookup.LookupProposal, DraftStop | None]:
        """With gamma auto, the copy cut where the rule stops (core.draft_length). q is a point mass, so the
        lookup's confidence in a copied token is the length of the match it was copied after, n / lookup_max_ngram
        (a longer match is copied from a likelier place), and the lookup's keep table turns it into a keep chance;
        the copy running out first is the stop's reason "copy"."""
        rule = self.config.draft_length
        if rule is None:
            return proposal, None
        stopper = rule.start(LOOKUP_SOURCE, runs_a_model=False)  # a copy costs no draft forward
        confidence = proposal.ngram / self.config.lookup_max_ngram
        kept, stopped = 0, False
        while kept < len(proposal.tokens) and not stopped:
            kept += 1
            stopped = not stopper.go_on(confidence)
        reason = None if stopped else "copy" if kept else "none"
        return replace(proposal, tokens=proposal.tokens[:kept]), stopper.record(reason)

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

