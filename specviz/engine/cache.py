"""A causal LM with its KV cache, the one module that touches the cache's own API.

transformers' `DynamicCache` grows with each forward; after a rejection `crop_to` drops the rejected
drafts' keys and values, so an accepted prefix is never recomputed. In transformers 5 `crop(-n)`
removes n positions (a positive argument is refused); tests/engine/test_cache.py pins that.
"""
from __future__ import annotations

import torch


class CachedModel:
    """A causal LM with its KV cache: feed only the tokens it has not seen yet."""

    def __init__(self, model, vocab_size: int):
        self.model, self.vocab_size = model, vocab_size
        self.cache = None
        self.seen = 0  # tokens whose keys/values are in the cache
        self.calls = 0

    @torch.inference_mode()
    def forward(self, new_ids: list[int], keep: int = 0) -> torch.Tensor:
        """Logits [n, V] for the last `keep` positions of new_ids (0: all); extends the cache."""
        ids = torch.tensor([new_ids], device=self.model.device)
        out = self.model(input_ids=ids, past_key_values=self.cache, use_cache=True, logits_to_keep=keep)
        self.cache = out.past_key_values
        self.seen += len(new_ids)
        self.calls += 1
        return out.logits[0, :, : self.vocab_size]  # padded embedding rows masked off

    def prefill(self, ids: list[int]) -> None:
        """Fill the cache with ids; only the last position's logits are computed (and dropped)."""
        if ids:
            self.forward(ids, keep=1)

    def crop_to(self, length: int) -> None:
        """Forget every position from `length` on (after a rejection): the cache keeps its first `length`."""
        if length < self.seen:
            self.cache.crop(length - self.seen)  # transformers 5.23: a negative count removes that many tokens
            self.seen = length
