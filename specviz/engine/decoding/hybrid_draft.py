"""The hybrid drafter (`--drafter auto`): prompt lookup where the context has a match for its last n tokens, the
pair's draft model elsewhere, chosen afresh every round.

One setting for a class's mixed prompts: text to copy (fix the spelling, quote, edit code) is copied at the
lookup's speed, and an answer with nothing to copy is drafted by the model. The choice reads only the context (is
there an earlier occurrence of the last n tokens, n >= `MIN_NGRAM`? with gamma auto: of any length the lookup
tries, where its keep table and the copies made so far in this text say a copy after such a match is kept at least
as often as a model draft; whether an earlier copy was kept is read from the text), never the target's p or the
round's uniforms, and each round's proposal carries the truthful q of the drafter chosen (a point mass on a copied token,
the draft's law on a sampled one): the output law is the target's (Leviathan et al. 2023, Appendix A.1, per round).

The draft model keeps its cache across lookup rounds: the next round it drafts, it first reads every token it has
not seen (one forward over them, as after a bonus token).
"""
from __future__ import annotations

import copy

import torch

from ...core import lookup
from ...core.config import DecodeConfig
from ..caches.cache import CachedModel
from ..models.loading import ModelPair
from .drafting import Drafted, TokenContext
from .lookup_draft import PromptLookup, in_template_header, never_copied
from .model_draft import ModelDraft

MIN_NGRAM = 3  # the shortest match that chooses the lookup: one or two repeated tokens are common in any answer


class HybridDraft:
    """Prompt lookup or the draft model, per round (the module's rule); the trace's source says which."""

    several_drafts = False  # one proposal per round, verified by the exact rule
    mentored = False        # a lookup round's q is a point mass: mentored decoding's plan needs a real q

    def __init__(self, pair: ModelPair, config: DecodeConfig, target: CachedModel, cache_options: dict,
                 generator: torch.Generator):
        self.pair, self.config = pair, config
        self.model = ModelDraft(pair, config, target, cache_options, generator)
        self.lookup = PromptLookup(pair, config, target, cache_options, generator)
        self.min_ngram = max(MIN_NGRAM, config.lookup_min_ngram)

    @classmethod
    def reads_target_features(cls, pair: ModelPair) -> bool:
        return ModelDraft.reads_target_features(pair)

    @classmethod
    def verify_sizes(cls, gamma: int) -> list[int]:
        return sorted(set(ModelDraft.verify_sizes(gamma)) | set(PromptLookup.verify_sizes(gamma)))

    def prefill(self, context: TokenContext) -> None:
        self.model.prefill(context)

    def capture(self) -> float:
        return self.model.capture()

    def chooses_lookup(self, context: TokenContext) -> bool:
        """Does the context hold an earlier occurrence of its last n tokens worth copying from? At a fixed gamma:
        n >= min_ngram. With gamma auto's rule: any n the lookup tries, where a copy's first token after a match of
        that length is kept at least as often as the draft model's tokens are: the lookup's own chance for it, its
        keep table weighed with this text's earlier copies (`PromptLookup.chance`; at T = 0.7 a one-token match's
        copy is kept 6% of the time on free text: docs/benchmarks.md), which the lookup first reads from the text."""
        config, rule = self.config, self.config.draft_length
        self.lookup.learn(context)
        shortest = self.min_ngram if rule is None else config.lookup_min_ngram
        if config.lookup_max_ngram < shortest or in_template_header(self.pair, context):
            return False
        searchable = context.n_prompt if config.lookup_source == "prompt" else None
        match = lookup.propose(context.ids, 1, config.lookup_max_ngram, shortest, searchable, never_copied(self.pair))
        if not match.matched or rule is None:
            return match.matched
        return self.lookup.chance("first", match.ngram) >= rule.table(ModelDraft.kind).prior

    def propose(self, context: TokenContext, gamma: int) -> Drafted:
        """The lookup's proposal where the context has a match (`chooses_lookup`), else the draft model's."""
        chosen = self.lookup if self.chooses_lookup(context) else self.model
        drafted = chosen.propose(context, gamma)
        drafted.detail = {"chose": chosen.kind, "details": chosen.source(drafted)}
        return drafted

    def crop(self, keep: int) -> None:
        self.model.crop(keep)

    def fork(self, target: CachedModel, generator: torch.Generator) -> HybridDraft:
        twin = copy.copy(self)
        twin.model = self.model.fork(target, generator)
        twin.lookup = self.lookup.fork(target, generator)
        return twin

    def cache_kinds(self) -> dict[str, str]:
        return self.model.cache_kinds()

    def held_bytes(self) -> int:
        return self.model.held_bytes()

    def graph_error(self) -> str:
        return self.model.graph_error()

    def source(self, drafted: Drafted) -> dict:
        """{"chose": "lookup" | "model", "details": the chosen drafter's own source details}."""
        return drafted.detail

    def learned(self) -> dict:
        return self.lookup.learned()  # its choice reads the lookup's tally of copies

    def relearn(self, learned: dict) -> None:
        self.lookup.relearn(learned)
