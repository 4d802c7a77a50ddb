"""A causal LM with its KV cache, the one module that touches the cache's own API.

transformers' `DynamicCache` grows with each forward; after a rejection `crop_to` drops the rejected
drafts' keys and values, so an accepted prefix is never recomputed. In transformers 5 `crop(-n)`
removes n positions (a positive argument is refused); tests/engine/test_cache.py pins that.

With `keep_features` the model also keeps its last hidden state at every position it has seen (the
"features" a draft like `feature_draft.FeatureDraft` reads), cropped, expanded and selected with the cache.

With `static_len` the keys and values live in a `static_cache.StaticKV` of that many positions instead
(one sequence; on CUDA its forwards replay as graphs): `crop_to` then moves its write position back.
"""
from __future__ import annotations

import copy

import torch

from .. import limits, settings
from ..models.lm_forward import logits_and_hidden
from .static_cache import StaticKV


class _Output:
    """What `_advance` and the callers read of a forward: logits, the cache, the last hidden states."""

    def __init__(self, logits, past_key_values, hidden_states):
        self.logits, self.past_key_values, self.hidden_states = logits, past_key_values, hidden_states


class CachedModel:
    """A causal LM with its KV cache: feed only the tokens it has not seen yet."""

    def __init__(self, model, vocab_size: int, keep_features: bool = False, static_len: int | None = None,
                 graphs: bool = False):
        self.model, self.vocab_size = model, vocab_size
        self.static = StaticKV(model, static_len, graphs) if static_len else None
        self.cache = self.static.cache if self.static else None
        self.seen = 0  # tokens whose keys/values are in the cache
        self.calls = 0
        self.rows = 1  # batch rows the cache holds: k while several drafts are scored, else 1
        self.keep_features = keep_features
        self.features = None  # [rows, seen, H] the last hidden state at every seen position (keep_features)

    def _embed(self, ids: torch.Tensor) -> torch.Tensor:
        """The model's inputs [k, n, H] for ids [k, n] (a draft reading the target's features changes them)."""
        return self.model.get_input_embeddings()(ids)

    def _static_call(self, inputs: torch.Tensor, keep: int, n: int | None = None) -> _Output:
        logits, hidden = self.static.forward(inputs, keep, n)  # [1, keep, V], [1, n, H]
        return _Output(logits=logits, past_key_values=self.cache, hidden_states=(hidden,))

    def _call(self, ids: torch.Tensor, keep: int, mask: torch.Tensor | None, n: int | None = None):
        """One forward of ids [k, n] over the cache (n: their number, where the caller knows it); subclasses change
        what goes in."""
        embeds = self._embed(ids)  # the model's own inputs: no input ids for transformers to check on the host
        if self.static is not None:
            return self._static_call(embeds, keep, n)
        if not self.keep_features:
            return self.model(inputs_embeds=embeds, attention_mask=mask, past_key_values=self.cache, use_cache=True,
                              logits_to_keep=keep)
        logits, hidden, past = logits_and_hidden(self.model, keep, inputs_embeds=embeds, attention_mask=mask,
                                                 past_key_values=self.cache)      # [k, keep, V], [k, n, H]
        return _Output(logits=logits, past_key_values=past, hidden_states=(hidden,))

    def _advance(self, out, n: int) -> None:
        self.cache = out.past_key_values
        self.seen += n
        self.calls += 1
        if self.keep_features:
            new = out.hidden_states[-1]  # [k, n, H] after the final norm: what the head reads
            if self.features is not None and self.features.shape[0] != new.shape[0]:
                self.features = self.features.expand(new.shape[0], -1, -1)
            self.features = new if self.features is None else torch.cat([self.features, new], 1)

    def _ids(self, ids: list | torch.Tensor, rows: int) -> torch.Tensor:
        """ids as a [rows, n] LongTensor on the model's device. A tensor already there is used as it is (a view:
        no host-to-device copy, nothing read back); a Python list is copied over, as a caller on the host has it."""
        if isinstance(ids, torch.Tensor):
            return ids.reshape(rows, -1)
        return torch.tensor(ids, dtype=torch.long, device=self.model.device).reshape(rows, -1)

    @torch.inference_mode()
    def forward(self, new_ids: list[int] | torch.Tensor, keep: int = 0) -> torch.Tensor:
        """Logits [n, V] for the last `keep` positions of new_ids (0: all); extends the cache. new_ids: a list,
        or a LongTensor [n] (or [1, n]) on the model's device, which a round on the device passes as it is."""
        ids = self._ids(new_ids, 1)  # [1, n]
        n = ids.shape[1]
        out = self._call(ids, keep, None, n)
        self._advance(out, n)
        return out.logits[0, :, : self.vocab_size]  # padded embedding rows masked off

    def unseen(self, ids: torch.Tensor, n: int) -> torch.Tensor:
        """[n] the next n of `ids` (a decoder's ids on the device, `drafting.DeviceIds.buffer`): the tokens at the
        positions this cache has not seen yet. On the static cache the positions come from its write position on the
        device, so a recorded region reads the right ids at every replay; on the dynamic cache from `seen`."""
        if self.static is not None:
            return ids.index_select(0, self.static.positions(n))
        return ids[self.seen: self.seen + n]

    def write_ids(self, ids: torch.Tensor, tokens: torch.Tensor, back: int) -> None:
        """Write `tokens` [n] into `ids` from position seen - back on (the static cache's write position on the
        device, as `unseen` reads): a round's emitted tokens, where the next round's forwards read them."""
        n = tokens.shape[0]
        if self.static is not None:
            ids.index_copy_(0, self.static.positions(n, back), tokens)
        else:
            ids[self.seen - back: self.seen - back + n].copy_(tokens)

    def capture(self, sizes) -> float:
        """With a static cache on CUDA: record the forwards over each number of new tokens in `sizes` as
        graphs (after the prefill, before any timed step). Returns the seconds it took."""
        if self.static is None:
            return 0.0
        before = self.static.capture_s
        self.static.capture(sizes)
        return self.static.capture_s - before

    def prefill(self, ids: list[int] | torch.Tensor) -> None:
        """Fill the cache with ids (a list or a LongTensor [n]); only the last position's logits are computed (and dropped). A long prefill
        is heavy work (`limits.heavy_slot`) and runs in chunks, the event's deadline checked between them."""
        if len(ids) == 0:
            return
        with limits.heavy_slot(len(ids), settings.current().concurrency):
            for start in range(0, len(ids), limits.PREFILL_CHUNK):
                limits.check()
                self.forward(ids[start: start + limits.PREFILL_CHUNK], keep=1)

    @torch.inference_mode()
    def forward_rows(self, rows: list[list[int]] | torch.Tensor, keep: int = 0) -> torch.Tensor:
        """Logits [k, n, V] for k rows of n new ids each (lists, or a LongTensor [k, n] on the model's device)
        over the cache's k copies (see `expand`)."""
        ids = self._ids(rows, len(rows))  # [k, n]
        if self.static is not None and ids.shape[0] > 1:
            raise ValueError("a static cache holds one sequence: use a dynamic one for several drafts")
        if self.cache is not None and self.seen and self.rows != ids.shape[0]:
            raise ValueError(f"the cache holds {self.rows} rows, not {ids.shape[0]}: expand it first")
        mask = torch.ones(ids.shape[0], self.seen + ids.shape[1], dtype=torch.long, device=ids.device)  # no padding
        out = self._call(ids, keep, mask)
        self._advance(out, ids.shape[1])
        self.rows = ids.shape[0]
        return out.logits[:, :, : self.vocab_size]

    def expand(self, rows: int) -> None:
        """Copy the (one-row) cache into `rows` rows that share its prefix, for batched drafts."""
        if self.static is not None and rows > 1:
            raise ValueError("a static cache holds one sequence: use a dynamic one for several drafts")
        if self.cache is not None and self.rows == 1 and rows > 1:
            self.cache.batch_repeat_interleave(rows)
            self.rows = rows
            if self.features is not None:
                self.features = self.features.expand(rows, -1, -1)

    def keep_row(self, row: int) -> None:
        """Keep only row `row` of a batched cache (the accepted chain's): back to one row."""
        if self.cache is not None and self.rows > 1:
            self.cache.batch_select_indices(torch.tensor([row], device=self.model.device))
        if self.features is not None and self.features.shape[0] > 1:
            self.features = self.features[row: row + 1]
        self.rows = 1

    def fork(self, source: CachedModel | None = None) -> CachedModel:
        """A copy whose cache grows apart from this one's (the keys and values are copied once); `source` is
        the forked target a draft reading its features follows (ignored here)."""
        twin = copy.copy(self)
        if self.static is not None:
            twin.static = self.static.fork()
            twin.cache = twin.static.cache
        else:
            twin.cache = copy.deepcopy(self.cache)
        return twin

    def crop_to(self, length: int) -> None:
        """Forget every position from `length` on (after a rejection): the cache keeps its first `length`."""
        if length < self.seen:
            if self.static is not None:
                self.static.set_length(length)
            else:
                self.cache.crop(length - self.seen)  # transformers 5.23: a negative count removes that many tokens
            self.seen = length
            if self.features is not None:
                self.features = self.features[:, :length]
