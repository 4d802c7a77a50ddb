"""Speculative sampling with prompt lookup as the draft (`core.lookup`): no draft model runs.

One `LookupDecoder.step()` is one round:
  1. draft    up to gamma tokens copied after the latest earlier occurrence of the last n tokens;
              q is one-hot on each proposed token (the proposal is a function of the context)
  2. verify   one cached target forward over the pending token and the k <= gamma proposed tokens
  3. correct  `sampling.verify` with the one-hot q: token x is accepted with chance min(1, p(x)/1) = p(x);
              after a rejection the residual norm(max(0, p - q)) is p without x, renormalised
With no earlier match nothing is proposed and the round is one target pass: a token drawn from p, as in
target-only decoding. The output law is exactly the target's (Leviathan et al. 2023, Appendix A.1: any q).
"""
from __future__ import annotations

import torch

from ...core import lookup, sampling
from ...core.trace import LookupTrace, StepRecord, StepTrace
from .decoders import Decoder, Drafted, SpeculativeDecoder, sync_device

CONTEXT_SHOWN = 6  # tokens shown before the matched n-gram on the card
AFTER_SHOWN = 3    # and after the copied ones


class LookupDecoder(SpeculativeDecoder):
    """Exact speculative sampling whose drafts are copied from the context (config.drafter == "lookup")."""

    def __init__(self, pair, prompt, config, *, resume=None, static_cache=None):
        # the pair's draft model is not used: only the target gets a cache and a prefill
        Decoder.__init__(self, pair, prompt, config, resume=resume, static_cache=static_cache)
        self.proposal, self.context_len = lookup.LookupProposal(tokens=[]), len(self.tokens)

    def _target_sizes(self) -> list[int]:
        return list(range(1, self.config.gamma + 2))  # the pending token and 0..gamma proposed ones

    def _needs_target_features(self) -> bool:
        return False

    def _draft(self) -> Drafted:
        """1. draft: the lookup's proposal (0..gamma tokens); q is filled in once p's dtype is known."""
        config = self.config
        searchable = self.n_prompt if config.lookup_source == "prompt" else None
        self.context_len = len(self.tokens)
        self.proposal = lookup.propose(self.tokens, config.gamma, config.lookup_max_ngram, config.lookup_min_ngram,
                                       searchable)
        return Drafted(tokens=list(self.proposal.tokens), probs=torch.zeros(0))

    def _verify(self, drafted: Drafted) -> torch.Tensor:
        target_probs = super()._verify(drafted)  # [k+1, V]
        drafted.probs = lookup.one_hot_draft(drafted.tokens, target_probs.shape[-1], target_probs)  # [k, V]
        return target_probs

    def _correct(self, target_probs: torch.Tensor, drafted: Drafted) -> tuple[sampling.Verification, list[int]]:
        """3. correct: the exact rule on the one-hot q; with nothing proposed, one token from p."""
        if drafted.tokens:
            return super()._correct(target_probs, drafted)
        final = target_probs[0]  # [V]
        token = sampling.sample(final, self.generator)
        none = final.new_zeros(0)  # [0]: nothing was examined
        result = sampling.Verification(n_accepted=0, tokens=[token], uniforms=none, drafted_accept_probs=none,
                                       final_probs=final)
        sync_device(self.pair.device)
        return result, self._settle(result)

    def _crop_caches(self, keep: int) -> None:
        self.target.crop_to(keep)

    def _trace(self, target_probs, drafted: Drafted, result: sampling.Verification, kept: list[int],
               record: StepRecord) -> StepTrace:
        trace = super()._trace(target_probs, drafted, result, kept, record)
        trace.drafter, trace.lookup = "lookup", self._lookup_trace()
        return trace

    def _lookup_trace(self) -> LookupTrace:
        """Where this round's proposal stands in the context it was copied from."""
        proposal, texts = self.proposal, self.pair.token_text
        searched = self.config.lookup_source
        if not proposal.matched:
            return LookupTrace(ngram=0, searched=searched)
        start, n, k = proposal.start, proposal.ngram, len(proposal.tokens)
        context = self.tokens[: self.context_len]

        def shown(lo: int, hi: int) -> list[str]:
            return [texts(x) for x in context[max(lo, 0): hi]]

        return LookupTrace(ngram=n, start=start, in_prompt=start < self.n_prompt,
                           before=shown(start - n - CONTEXT_SHOWN, start - n), matched=shown(start - n, start),
                           copied=shown(start, start + k), after=shown(start + k, start + k + AFTER_SHOWN),
                           searched=searched)
