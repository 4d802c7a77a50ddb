"""The draft model as a drafter: gamma cached forwards, one token each, sampled from the warped draft.

The pair's draft runs with its own KV cache; a draft built to read the target's hidden states
(`feature_draft.FeatureDraft`) reads the target's cache's features. `propose_chains` drafts k chains at once for
the tree decoder: one batched forward per depth, chains that share a prefix sharing its distribution.
"""
from __future__ import annotations

import copy

import torch

from ...core import sampling
from ...core.config import DecodeConfig
from ..caches.cache import CachedModel
from ..memory import held_bytes
from ..models.loading import ModelPair
from .drafting import Drafted, TokenContext, cache_kind
from .feature_draft import cached_draft, reads_features


def node_representatives(chains: list[list[int]], depth: int) -> list[int]:
    """For each chain, the first chain with the same first `depth` tokens (the tree node it sits at)."""
    first: dict[tuple, int] = {}
    return [first.setdefault(tuple(c[:depth]), i) for i, c in enumerate(chains)]


class ModelDraft:
    """The pair's draft model (plain, or reading the target's features) proposing gamma sampled tokens."""

    several_drafts = True
    mentored = True

    def __init__(self, pair: ModelPair, config: DecodeConfig, target: CachedModel, cache_options: dict,
                 generator: torch.Generator):
        self.pair, self.config, self.generator = pair, config, generator
        self.model = cached_draft(pair.draft, pair.vocab_size, target, **cache_options)

    @classmethod
    def reads_target_features(cls, pair: ModelPair) -> bool:
        return reads_features(pair.draft)

    @classmethod
    def verify_sizes(cls, gamma: int) -> list[int]:
        return [gamma + 1]  # every verify: the pending token and gamma drafts

    def prefill(self, context: TokenContext) -> None:
        self.model.prefill(context.ids[:-1])

    def capture(self) -> float:
        # a plain draft's first call covers 1 token, or 2 after a bonus; a feature draft's covers the
        # tokens accepted in the last round, recomputed from the target's features, and the pending one
        gamma = self.config.gamma
        return self.model.capture(range(1, gamma + 2) if reads_features(self.pair.draft) else [1, 2])

    def warp(self, logits: torch.Tensor) -> torch.Tensor:
        """The draft's sampling law: the run's warping, as for the target (tests override it to plant a
        defect, such as a draft run at another temperature)."""
        return self.config.warp(logits)

    def propose(self, context: TokenContext, gamma: int) -> Drafted:
        """gamma tokens, one cached forward each, sampled from the warped draft at the round's uniforms: every
        token stays on the device and feeds the next forward from there. With gamma auto (`config.draft_length`)
        fewer: after each token the rule reads the draft's confidence in it (one host read a token) and says
        whether to draft another (core.draft_length: the token itself is always proposed)."""
        rule = self.config.draft_length
        stopper = rule.start(self.kind) if rule is not None else None
        tokens, rows = [], []
        pending = context.tail(self.model.seen)  # [1], or [2] after a bonus the draft never saw
        for i in range(gamma):
            logits = self.model.forward(pending, keep=1)[-1]  # [V]
            probs = self.warp(logits)  # [V]
            # a row without mass (NaN logits) draws NO_TOKEN: clamped so the next forward runs, and refused by the
            # round's checks when it is read
            token = sampling.sample_from_uniforms(probs, context.uniforms[i]).clamp_min(0)  # 0-d long
            tokens.append(token)
            rows.append(probs)
            pending = token.reshape(1)
            if stopper is not None and not stopper.go_on(self.confidence(logits, probs, token)):
                break
        return Drafted(tokens=torch.stack(tokens), probs=torch.stack(rows), forwards=len(tokens),
                       stop=stopper.record() if stopper is not None else None)  # [k], [k, V]

    def confidence(self, logits: torch.Tensor, probs: torch.Tensor, token: torch.Tensor) -> float:
        """The draft's confidence in the token it drew (core.draft_length): q(x) under the law it drew from; at
        T = 0, where that law is one-hot on the argmax, the top-1 probability of the unwarped softmax."""
        if self.config.greedy:
            return float(torch.softmax(logits.float(), -1).max())
        return float(probs[token])

    def propose_chains(self, context: TokenContext, k: int, gamma: int) -> tuple[list[list[int]], torch.Tensor]:
        """k chains of gamma tokens, one batched forward per depth; chains at one node share its distribution.
        Returns the chains [k][gamma] and their draft laws [k, gamma, V]."""
        pending = context.ids[self.model.seen:]  # on the host: the tree's round reads its drafts as it goes
        self.model.expand(k)
        chains, rows = [[] for _ in range(k)], []
        inputs = [pending] * k
        for depth in range(gamma):
            probs = self.warp(self.model.forward_rows(inputs, keep=1)[:, -1])  # [k, V]
            probs = probs[node_representatives(chains, depth)]                  # [k, V]
            for i in range(k):
                chains[i].append(sampling.sample(probs[i], self.generator))
            rows.append(probs)
            inputs = [[c[-1]] for c in chains]
        return chains, torch.stack(rows, 1)  # [k, gamma, V]

    def keep_row(self, row: int) -> None:
        """After several drafts: keep the accepted chain's cache row."""
        self.model.keep_row(row)

    def crop(self, keep: int) -> None:
        self.model.crop_to(keep)

    def fork(self, target: CachedModel, generator: torch.Generator) -> ModelDraft:
        twin = copy.copy(self)
        twin.model, twin.generator = self.model.fork(target), generator
        return twin

    def cache_kinds(self) -> dict[str, str]:
        return {"draft": cache_kind(self.model)}

    def held_bytes(self) -> int:
        return held_bytes(self.model)

    def graph_error(self) -> str:
        return self.model.static.graph_error if self.model.static is not None else ""

    def source(self, drafted: Drafted) -> dict:
        return {"reads_target": True} if reads_features(self.pair.draft) else {}
