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
from . import round_regions
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
        self.buffers: dict[int, tuple[torch.Tensor, torch.Tensor]] = {}  # gamma -> the loop's tokens and q
        self.regions: dict[tuple[int, int], round_regions.Region] = {}  # (pending, gamma) -> the recorded loop

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
        """gamma tokens, one cached forward each, each raced from the warped draft: `draft_loop`, replayed as one
        recorded region where one was captured for this many pending tokens. With gamma auto (`config.draft_length`)
        fewer: `draft_until_doubt`, always eager."""
        pending = len(context.ids) - self.model.seen  # 1, or 2 after a bonus the draft never saw
        if self.config.draft_length is not None:
            return self.draft_until_doubt(context.on_device.buffer, pending, gamma)
        region = self.regions.get((pending, gamma))
        tokens, probs = region.replay() if region is not None else self.draft_loop(context.on_device.buffer, pending,
                                                                                   gamma)
        return Drafted(tokens=tokens, probs=probs, forwards=gamma)  # [gamma], [gamma, V]

    def draft_loop(self, ids: torch.Tensor, pending: int, gamma: int) -> tuple[torch.Tensor, torch.Tensor]:
        """1. draft, as one region (`round_regions`): the pending ids read from the device at the draft's own
        position, then gamma forwards, each token raced (`sampling.race`) from its row of the round's gamma x V
        uniforms and fed to the next forward on the device. Writes the draft's tokens [gamma] and q [gamma, V] into
        its buffers (fixed addresses, which the verify region reads) and returns them."""
        tokens, rows = self._buffers(gamma)
        uniforms = torch.rand(gamma, self.pair.vocab_size, generator=self.generator, device=rows.device,
                              dtype=torch.float64)                                    # [gamma, V]
        inputs = self.model.unseen(ids, pending)                                       # [pending]
        drawn, laws = [], []
        for keys in sampling.race_keys(uniforms).split(1):                            # [1, V] each
            probs = self.warp(self.model.forward(inputs, keep=1))                      # [1, V]
            # a row without mass (NaN logits) draws some token: the round's checks refuse its q when it is read
            inputs = sampling.race(probs, keys, checked=False)                         # [1] long: the next input
            drawn.append(inputs)
            laws.append(probs)
        return torch.cat(drawn, out=tokens), torch.cat(laws, out=rows)

    def draft_until_doubt(self, ids: torch.Tensor, pending: int, gamma: int) -> Drafted:
        """gamma auto: `draft_loop`'s tokens one at a time until the rule stops (core.draft_length): after each token
        it reads the draft's confidence in it (one host read a token) and says whether to draft another (the token
        itself is always proposed). Always eager: where it stops is known on the host only, so no region is recorded
        for it (on CUDA each forward still replays its own graph, and the verify runs eagerly). Each token's row of V
        uniforms is drawn when the token is, so the rows past the stop are never drawn: `draft_loop`'s one call for
        all gamma rows would cost a round that stops at one token of SmolLM2's 49,152 more than its draft forward
        (gamma_max 8: 3.1 ms of uniforms and keys against 0.2 ms a row, measured on this project's 2-core CPU)."""
        stopper = self.config.draft_length.start(self.kind)
        inputs = self.model.unseen(ids, pending)                                       # [pending]
        drawn, laws = [], []
        for _ in range(gamma):
            keys = sampling.race_keys(torch.rand(1, self.pair.vocab_size, generator=self.generator,
                                                 device=self.model.model.device, dtype=torch.float64))  # [1, V]
            logits = self.model.forward(inputs, keep=1)                                # [1, V]
            probs = self.warp(logits)                                                  # [1, V]
            inputs = sampling.race(probs, keys, checked=False)                         # [1] long
            drawn.append(inputs)
            laws.append(probs)
            if not stopper.go_on(self.confidence(logits[0], probs[0], inputs[0])):
                break
        return Drafted(tokens=torch.cat(drawn), probs=torch.cat(laws), forwards=len(drawn),
                       stop=stopper.record())                                          # [k], [k, V]

    def confidence(self, logits: torch.Tensor, probs: torch.Tensor, token: torch.Tensor) -> float:
        """The draft's confidence in the token it drew (core.draft_length): q(x) under the law it drew from; at
        T = 0, where that law is one-hot on the argmax, the top-1 probability of the unwarped softmax."""
        if self.config.greedy:
            return float(torch.softmax(logits.float(), -1).max())
        return float(probs[token])

    def _buffers(self, gamma: int) -> tuple[torch.Tensor, torch.Tensor]:
        if gamma not in self.buffers:
            device = self.model.model.device
            self.buffers[gamma] = (torch.zeros(gamma, dtype=torch.long, device=device),
                                   torch.zeros(gamma, self.pair.vocab_size, device=device))
        return self.buffers[gamma]

    def capture_loop(self, ids: torch.Tensor, gamma: int, graphs) -> tuple[str, float]:
        """Record the draft loop as one region per number of pending tokens (1, and 2 after a bonus) with `graphs`
        (`round_regions.recorder`); ('' or why it stays eager, seconds). Call after the prefill, before any round:
        each recording reads ids from the draft's position on and writes keys only past it (stale, overwritten by
        the next forward), so no position the draft has seen changes."""
        if why := round_regions.usable([self.model]):
            return why, 0.0
        seconds = 0.0
        for pending in (1, 2):
            region, why, spent = round_regions.try_capture(lambda p=pending: self.draft_loop(ids, p, gamma),
                                                           [self.model], self.generator, graphs)
            seconds += spent
            if region is None:
                return why, seconds
            self.regions[(pending, gamma)] = region
        return "", seconds

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
        twin.buffers, twin.regions = {}, {}  # recorded against this one's buffers and generator: capture again
        return twin

    def cache_kinds(self) -> dict[str, str]:
        return {"draft": cache_kind(self.model)}

    def held_bytes(self) -> int:
        return held_bytes(self.model)

    def graph_error(self) -> str:
        return self.model.static.graph_error if self.model.static is not None else ""

    def source(self, drafted: Drafted) -> dict:
        return {"reads_target": True} if reads_features(self.pair.draft) else {}

    def learned(self) -> dict:
        return {}  # its cache is rebuilt from the text: nothing else to carry

    def relearn(self, learned: dict) -> None:
        pass
