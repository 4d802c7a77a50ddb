"""Who proposes the drafts: the interface every drafter implements, and what one proposal carries.

A speculative round is draft, verify, correct; only the first step differs between a draft model, a draft
reading the target's hidden states and prompt lookup. Each is a `Drafter` (as transformers' assisted generation
has its `CandidateGenerator`s and vLLM its proposers beside one rejection sampler): the decoder holds one, asks
it for a proposal, verifies it with the exact rule and tells it how much of the proposal was kept.

A proposal stays on the device: its tokens are a LongTensor and its draft law q a tensor of rows (or none: a
point mass on each token, built on the device once the target's dtype is known). The output law is the target's
for any q computed before its token was drawn (Leviathan et al. 2023, Appendix A.1), so a new drafter needs
no new proof, only a q that says truthfully how its tokens were chosen.
"""
from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import ClassVar, Protocol

import torch

from ...core.config import DecodeConfig
from ...core.draft_length import DraftStop
from ..caches.cache import CachedModel
from ..models.loading import ModelPair


class DeviceIds:
    """A decoder's token ids on the device, beside its host list: a round writes its new tokens here before its one
    read, so the next round's forwards take their inputs from the device (no list copied over per forward)."""

    def __init__(self, ids: list[int], capacity: int, device: torch.device):
        self.buffer = torch.zeros(max(capacity, len(ids)), dtype=torch.long, device=device)  # past the ids: scratch
        self.buffer[: len(ids)] = torch.as_tensor(ids, dtype=torch.long).to(device)  # once, when the decoder starts

    def write(self, at: int, tokens: torch.Tensor) -> None:
        """Put a round's tokens (a device LongTensor; padding past the kept ones is overwritten later) at `at`."""
        n = min(tokens.shape[0], self.buffer.shape[0] - at)
        self.buffer[at: at + n].copy_(tokens[:n])

    def clone(self) -> DeviceIds:
        twin = copy.copy(self)
        twin.buffer = self.buffer.clone()
        return twin


@dataclass
class TokenContext:
    """The tokens so far (prompt and generated), as the drafters read them: `ids` on the host, the same on the
    device (`tail`: what a cached model has not seen yet)."""
    ids: list[int]
    n_prompt: int                     # the first n_prompt ids are the prompt
    on_device: DeviceIds

    def tail(self, start: int) -> torch.Tensor:
        """The ids from position `start` on, on the device: [n] long."""
        return self.on_device.buffer[start: len(self.ids)]


@dataclass
class Drafted:
    """One round's proposal, on the device."""
    tokens: torch.Tensor              # [gamma] long: the proposed ids (gamma may be fewer than asked, even 0)
    probs: torch.Tensor | None        # [gamma, V] the draft law q each was drawn from; None: a point mass on each
    forwards: int = 0                 # draft-model forwards this proposal cost (the counters' draft passes)
    detail: dict = field(default_factory=dict)  # what the trace's draft source records of this round
    stop: DraftStop | None = None     # gamma auto: where and why drafting stopped (core.draft_length)

    @property
    def gamma(self) -> int:
        return self.tokens.shape[0]  # a shape: known on the host without a read

    def q(self, like: torch.Tensor) -> torch.Tensor:
        """q as rows [gamma, V] in `like`'s dtype and device: the drafter's rows, or one-hot rows built on the
        device from the tokens (a proposal that is a function of the context: q(x) = 1)."""
        if self.probs is not None:
            return self.probs
        rows = torch.zeros(self.gamma, like.shape[-1], dtype=like.dtype, device=like.device)  # [gamma, V]
        return rows.scatter_(-1, self.tokens.to(like.device)[:, None], 1.0)


class Drafter(Protocol):
    """What a decoder asks of whoever proposes its drafts. Built once per decoder, after the target's cache
    (`drafters.build`), with the decoder's generator (a drafter that samples draws from it alone)."""

    kind: ClassVar[str]               # its name in the registry, set by `drafters.register`
    several_drafts: ClassVar[bool]    # can propose k chains at once (the tree decoder's `propose_chains`)
    mentored: ClassVar[bool]          # may run with kl_budget > 0 (mentored decoding's plan needs a real q)

    def __init__(self, pair: ModelPair, config: DecodeConfig, target: CachedModel, cache_options: dict,
                 generator: torch.Generator) -> None: ...

    @classmethod
    def reads_target_features(cls, pair: ModelPair) -> bool:
        """Must the target keep its last hidden states for this drafter (a feature-reading draft)?"""

    @classmethod
    def verify_sizes(cls, gamma: int) -> list[int]:
        """How many new tokens the target's verify forwards take (what a static cache captures)."""

    def prefill(self, context: TokenContext) -> None:
        """Read the prompt (all but the pending last token), as the target's prefill does."""

    def capture(self) -> float:
        """Capture what can replay as CUDA graphs; seconds spent (0 without graphs)."""

    def propose(self, context: TokenContext, gamma: int) -> Drafted:
        """Up to gamma tokens to follow `context`, with the law they were drawn from."""

    def crop(self, keep: int) -> None:
        """The round kept the first `keep` tokens of the context: forget anything after them."""

    def fork(self, target: CachedModel, generator: torch.Generator) -> Drafter:
        """A copy that goes on from here with `target` (the forked decoder's) and `generator`."""

    def cache_kinds(self) -> dict[str, str]:
        """How each model of the drafter runs: {'draft': 'cuda graphs' | 'static' | 'dynamic'}; {} without one."""

    def held_bytes(self) -> int:
        """Bytes the drafter's caches hold now."""

    def graph_error(self) -> str:
        """Why a capture failed ('' where none did)."""

    def source(self, drafted: Drafted) -> dict:
        """The trace's draft-source details of this round (`DraftSource.details`): plain JSON data."""

    def learned(self) -> dict:
        """What it learned from the text so far, as plain data ({} for a drafter that learns nothing): a decoder's
        `state()` carries it, so a run stepped from plain state (ZeroGPU's workers) drafts as a live one does."""

    def relearn(self, learned: dict) -> None:
        """Take back what `learned` returned."""


class ModelFreeDrafter:
    """What a drafter that runs no model shares (prompt lookup, a rule over the context): no cache to prefill,
    capture, crop or fork, nothing held; its trace's source is what its proposal says. Such a drafter adds
    `verify_sizes` and `propose`."""

    several_drafts = False  # one proposal per round, verified by the exact rule: what is proven for a one-hot q
    mentored = False

    def __init__(self, pair: ModelPair, config: DecodeConfig, target: CachedModel, cache_options: dict,
                 generator: torch.Generator):
        self.pair, self.config = pair, config

    @classmethod
    def reads_target_features(cls, pair: ModelPair) -> bool:
        return False

    def prefill(self, context: TokenContext) -> None:
        pass  # nothing to read ahead: each proposal reads the context as it stands

    def capture(self) -> float:
        return 0.0

    def crop(self, keep: int) -> None:
        pass

    def fork(self, target: CachedModel, generator: torch.Generator) -> ModelFreeDrafter:
        return self  # holds nothing that a round changes

    def cache_kinds(self) -> dict[str, str]:
        return {}

    def held_bytes(self) -> int:
        return 0

    def graph_error(self) -> str:
        return ""

    def source(self, drafted: Drafted) -> dict:
        return drafted.detail

    def learned(self) -> dict:
        return {}

    def relearn(self, learned: dict) -> None:
        pass


def cache_kind(model: CachedModel) -> str:
    """'cuda graphs', 'static' or 'dynamic': how a cached model's forwards run."""
    return "dynamic" if model.static is None else "cuda graphs" if model.static.captured else "static"
