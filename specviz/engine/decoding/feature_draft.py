"""A draft that reads the target's hidden states (EAGLE: Li, Wei, Zhang and Zhang, "EAGLE: Speculative
Sampling Requires Rethinking Feature Uncertainty", arXiv:2401.15077).

The target's last hidden state at position j-1 (its "feature" f, what its head turns into p for token j)
already says a great deal about token j + 1. Such a draft is a small decoder whose input at position j is
fc([embed(t_j); f_{j-1}]) instead of embed(t_j) alone. Where the target has computed f_{j-1} (every
position up to the last verified one) the draft reads the target's own feature; for the positions it is
drafting now, which the target has not seen yet, it reads its own last hidden state, its guess of f.
Its head is the target's (rows for its vocabulary), so q = softmax(head(guess)).

Exactness does not depend on any of this: q is still a distribution computed before the token is drawn
from it, and the verify step compares it with p as for any draft.

Bookkeeping: the draft's cache holds keys and values computed from inputs it got from the target
(`true_seen` positions) and, while drafting, from its own guesses. `crop_to` never keeps a position
computed from a guess: the next round recomputes it from the target's feature (EAGLE does the same),
which costs one multi-token draft forward over the tokens accepted in the round.
"""
from __future__ import annotations

import torch

from ..caches.cache import CachedModel


def reads_features(model) -> bool:
    """True for a draft built to read the target's hidden states (it has a `feature_fc` layer)."""
    return isinstance(getattr(model, "feature_fc", None), torch.nn.Module)


class FeatureDraft(CachedModel):
    """A `CachedModel` whose inputs carry the target's features, read from `source` (the target's
    CachedModel with keep_features=True) where it has them and from the draft's own guess otherwise."""

    def __init__(self, model, vocab_size: int, source: CachedModel, **cache_options):
        if not reads_features(model):
            raise TypeError("this draft does not read the target's hidden states (no feature_fc layer)")
        if not source.keep_features:
            raise ValueError("the target must keep its features (CachedModel(..., keep_features=True))")
        super().__init__(model, vocab_size, **cache_options)
        self.source = source
        self.guess = None    # [rows, 1, H] the draft's own last hidden state: its guess of the next feature
        self.true_seen = 0   # positions whose inputs all came from the target

    def _features_before(self, rows: int, n: int) -> tuple[torch.Tensor, bool]:
        """The feature fed beside each of the n new tokens: f_{j-1} for j = seen .. seen + n - 1; [rows, n, H].
        Also whether every one of them is the target's."""
        source, start = self.source, self.seen
        hidden = self.model.config.hidden_size
        device, dtype = self.model.device, self.model.feature_fc.weight.dtype
        parts, true = [], True
        if start == 0:  # position 0 has nothing before it
            parts.append(torch.zeros(rows, 1, hidden, device=device, dtype=dtype))
        elif start - 1 >= source.seen:  # the draft's own last position: the target has not seen it
            if self.guess is None:
                raise RuntimeError("the draft is ahead of the target without a guess of its feature")
            parts.append(self.guess)
            true = False
        first_from_source = start if start == 0 or start - 1 >= source.seen else start - 1
        last = start + n - 1  # exclusive end of f indices needed: f_{start-1} .. f_{start+n-2}
        if last > first_from_source:
            if last > source.seen:
                raise RuntimeError(f"the target has features for {source.seen} positions; the draft needs {last}")
            parts.append(source.features[:, first_from_source:last])
        feats = torch.cat([p.to(dtype).expand(rows, -1, -1) for p in parts], 1)  # [rows, n, H]
        return feats, true

    def _embed(self, ids: torch.Tensor) -> torch.Tensor:
        """fc([embed(t_j); f_{j-1}]) for each new token: [k, n, H]."""
        feats, self._true = self._features_before(ids.shape[0], ids.shape[1])
        embeds = self.model.get_input_embeddings()(ids)                                   # [k, n, H]
        return self.model.feature_fc(torch.cat([embeds, feats], -1))                       # [k, n, H]

    def _call(self, ids: torch.Tensor, keep: int, mask: torch.Tensor | None, n: int | None = None):
        inputs = self._embed(ids)
        if self.static is not None:
            return self._static_call(inputs, keep, n)
        return self.model(inputs_embeds=inputs, attention_mask=mask, past_key_values=self.cache, use_cache=True,
                          logits_to_keep=keep, output_hidden_states=True)

    def _advance(self, out, n: int) -> None:
        super()._advance(out, n)
        self.guess = out.hidden_states[-1][:, -1:]  # [k, 1, H]
        if self._true and self.true_seen == self.seen - n:
            self.true_seen = self.seen

    def expand(self, rows: int) -> None:
        super().expand(rows)
        if self.guess is not None and self.guess.shape[0] == 1 and rows > 1:
            self.guess = self.guess.expand(rows, -1, -1)

    def keep_row(self, row: int) -> None:
        super().keep_row(row)
        if self.guess is not None and self.guess.shape[0] > 1:
            self.guess = self.guess[row: row + 1]

    def fork(self, source: CachedModel | None = None) -> FeatureDraft:
        twin = super().fork()
        twin.source = source or self.source
        return twin

    def crop_to(self, length: int) -> None:
        """As CachedModel's, but never keeps a position computed from a guess (recomputed next round)."""
        super().crop_to(min(length, self.true_seen))
        self.true_seen = min(self.true_seen, self.seen)


def cached_draft(model, vocab_size: int, target: CachedModel, **cache_options) -> CachedModel:
    """The draft's CachedModel: a FeatureDraft reading `target` for a draft built so, else a plain one
    (`cache_options`: CachedModel's static_len and graphs)."""
    if reads_features(model):
        return FeatureDraft(model, vocab_size, target, **cache_options)
    return CachedModel(model, vocab_size, **cache_options)
