"""Step-wise speculative decoding over real models (the target-only baseline and what every decoder shares
are in `base`).

One `SpeculativeDecoder.step()` is one round of the algorithm:
  1. draft    gamma cached draft forwards, one new token each, sampled from the warped draft
  2. verify   one cached target forward over the gamma + 1 new positions
  3. correct  `sampling.verify`: accept a prefix, then resample at the first rejection or add
              the bonus token; both KV caches are cropped back so no prefix is ever recomputed
Randomness comes only from the decoder's own `torch.Generator(seed)`.
"""
from __future__ import annotations

import time

import torch

from ...core import sampling
from ...core.config import DecodeConfig
from ...core.trace import (
    Candidate,
    Correction,
    Counters,
    DraftSource,
    EmittedToken,
    PositionTrace,
    StepRecord,
    StepTrace,
)
from ..models.loading import ModelPair
from .base import (
    Decoder,
    DecoderState,
    DecodingFinished,
    TargetOnlyDecoder,
    check_prompt,
    clean_text,
    prepare_prompt,
    sync_device,
)
from .drafters import drafter_class
from .drafting import Drafted, Drafter, TokenContext

__all__ = ["Decoder", "DecoderState", "DecodingFinished", "Drafted", "SpeculativeDecoder", "TargetOnlyDecoder",
           "check_prompt", "clean_text", "counted_drafts", "prepare_prompt", "sync_device"]
def counted_drafts(eos: int | None, result, gamma: int) -> dict:
    """n_accepted, n_examined and after_eos of a round as the metrics count them: an accepted EOS ends the
    text, so the drafts after it are never output and count as neither drafted, tested nor accepted
    (counting them inflates every acceptance figure of short answers)."""
    accepted = result.tokens[: result.n_accepted]
    if eos is None or eos not in accepted:
        return {"n_accepted": result.n_accepted, "n_examined": result.n_examined, "after_eos": 0}
    kept = accepted.index(eos) + 1
    return {"n_accepted": kept, "n_examined": kept, "after_eos": gamma - kept}


class SpeculativeDecoder(Decoder):
    """Speculative sampling (kl_budget = 0) or mentored decoding (kl_budget > 0), one round per step().

    One chain, proposed by the decoder's drafter (`drafters`: the draft model, prompt lookup, ...). Several drafts at
    once (config.drafts > 1) are `tree_decoder.TreeDecoder`'s: `factory.make_decoder` picks the decoder and the
    drafter a config asks for, and this class refuses a config it would not honour."""

    def __init__(self, pair: ModelPair, prompt: str, config: DecodeConfig, *, resume: DecoderState | None = None,
                 static_cache: bool | None = None, drafter: type[Drafter] | None = None):
        if type(self) is SpeculativeDecoder and isinstance(config, DecodeConfig) and config.drafts > 1:
            raise ValueError("SpeculativeDecoder drafts one chain; this config asks for several drafts: build it "
                             "with make_decoder(pair, prompt, config)")
        self.drafter_class = drafter or (drafter_class(config) if isinstance(config, DecodeConfig) else None)
        super().__init__(pair, prompt, config, resume=resume, static_cache=static_cache)
        self.drafter: Drafter = self.drafter_class(pair, config, self.target, self.cache_options, self.generator)
        t0 = time.perf_counter()
        self.drafter.prefill(self._context())
        sync_device(pair.device)
        self.prefill_s += time.perf_counter() - t0
        self.capture_s += self.drafter.capture()
        if error := self.drafter.graph_error():
            self.graphs_off = "; ".join(filter(None, (self.graphs_off, f"draft: {error}")))

    def _target_sizes(self) -> list[int]:
        return self.drafter_class.verify_sizes(self.config.gamma)

    def _needs_target_features(self) -> bool:
        return self.drafter_class.reads_target_features(self.pair)

    def _context(self) -> TokenContext:
        return TokenContext(ids=self.tokens, n_prompt=self.n_prompt)

    @property
    def cache_kinds(self) -> dict[str, str]:
        return {**self.drafter.cache_kinds(), **super().cache_kinds}

    def held_bytes(self) -> int:
        return super().held_bytes() + self.drafter.held_bytes()

    def fork(self, seed: int):
        twin = super().fork(seed)
        twin.drafter = self.drafter.fork(twin.target, twin.generator)
        return twin

    @property
    def steps(self) -> int:
        return len(self.records)

    def step(self) -> StepTrace | None:
        """One round; returns its StepTrace (None when config.record is off)."""
        self._check_not_finished()
        t0 = time.perf_counter()
        drafted = self._draft()                               # 1. draft
        t1 = time.perf_counter()
        target_probs = self._verify(drafted)                  # 2. verify   [gamma+1, V]
        t2 = time.perf_counter()
        result, kept = self._correct(target_probs, drafted)   # 3. correct
        t3 = time.perf_counter()
        record = StepRecord(gamma=drafted.gamma, n_emitted=len(kept), draft_s=t1 - t0, target_s=t2 - t1,
                            step_s=t3 - t0, **counted_drafts(self.eos, result, drafted.gamma))
        self.records.append(record)
        self.counters.compute_s += record.step_s
        if not self.config.record:
            return None
        return self._trace(target_probs, drafted, result, kept, record)

    def _draft(self) -> Drafted:
        """1. draft: the drafter's proposal (config.gamma tokens, or fewer where a lookup found fewer)."""
        drafted = self.drafter.propose(self._context(), self.config.gamma)
        sync_device(self.pair.device)
        self.counters.draft_calls += drafted.forwards
        return drafted

    def _verify(self, drafted: Drafted) -> torch.Tensor:
        """2. verify: one target forward over the pending token and the drafts."""
        gamma = drafted.gamma
        logits = self.target.forward(self.tokens[self.target.seen:] + drafted.ids, keep=gamma + 1)  # [gamma+1, V]
        target_probs = self.config.warp(logits)  # [gamma+1, V]
        sync_device(self.pair.device)
        self.counters.target_calls += 1
        return target_probs

    def _correct(self, target_probs: torch.Tensor, drafted: Drafted) -> tuple[sampling.Verification, list[int]]:
        """3. correct: accept a prefix, resample or add the bonus token, crop both caches back. With nothing
        proposed, one token from p (as in target-only decoding)."""
        if drafted.gamma:
            result = sampling.verify(target_probs, drafted.q(target_probs), drafted.tokens,
                                     kl_budget=self.config.kl_budget, generator=self.generator)
        else:
            final = target_probs[0]  # [V]
            none = final.new_zeros(0)  # [0]: nothing was examined
            result = sampling.Verification(n_accepted=0, tokens=[sampling.sample(final, self.generator)],
                                           uniforms=none, drafted_accept_probs=none, final_probs=final)
            sync_device(self.pair.device)
        return result, self._settle(result)

    def _settle(self, result: sampling.Verification) -> list[int]:
        """Crop the caches to the accepted prefix, count the verdicts, append the new tokens (what was kept)."""
        keep = len(self.tokens) + result.n_accepted  # the new last token is pending
        self.target.crop_to(keep)
        self.drafter.crop(keep)
        self.counters.examined += result.n_examined
        self.counters.accepted += result.n_accepted
        return self._accept_new(result.tokens)

    # ------------------------------------------------------------------ trace

    def _candidates(self, rows: list[torch.Tensor], must: list[int]) -> list[tuple[list[int], list[list[float]], list[float]]]:
        """rows: R distributions [P, V] over the same P positions. Per position: the union of the first
        two rows' top-k of positive mass and the `must` token, ordered by the first row; each row's values
        there; and each row's mass outside them (the "other" note). (A one-hot row, a lookup's q or any
        row at T = 0, adds its one token, not k - 1 tokens of probability 0.)"""
        k = min(self.config.trace_top_k, self.pair.vocab_size)
        stacked = torch.stack(rows, 1)  # [P, R, V]
        best = stacked[:, :2].topk(k, dim=-1)  # [P, 2, k]: the first two rows' top-k
        top = torch.where(best.values > 0, best.indices, -1).flatten(1).tolist()  # [P, 2k], -1: no mass
        out = []
        for pos, ids in enumerate(top):
            ids = [x for x in dict.fromkeys(ids + [must[pos]]) if x >= 0]
            values = stacked[pos][:, ids]  # [R, n]
            order = values[0].argsort(descending=True).tolist()
            ids = [ids[i] for i in order]
            values = values[:, order]
            out.append((ids, values.tolist(), (1 - values.sum(-1)).clamp_min(0).tolist()))
        return out

    def _trace(self, target_probs, drafted: Drafted, result: sampling.Verification, kept: list[int],
               record: StepRecord) -> StepTrace:
        gamma, n_accepted, token_text, step = drafted.gamma, result.n_accepted, self.pair.token_text, self.steps
        target, draft = target_probs[:gamma], drafted.q(target_probs)  # [gamma, V]
        tokens = drafted.tokens.to(target.device)  # [gamma]
        kl_spent = (result.drafted_kl.to(target.dtype) if result.drafted_kl is not None
                    else torch.zeros_like(tokens, dtype=target.dtype))
        per_position = {  # one row of gamma numbers each, moved to the host in one go
            "draft_prob": draft.gather(-1, tokens[:, None])[:, 0], "target_prob": target.gather(-1, tokens[:, None])[:, 0],
            "exact_accept_prob": sampling.accept_probability(target, draft, tokens),
            "tv": sampling.tv_distance(target, draft), "kl": sampling.kl_divergence(target, draft),
            "overlap": sampling.acceptance_rate(target, draft), "kl_spent": kl_spent,
            "target_entropy": sampling.entropy(target), "draft_entropy": sampling.entropy(draft)}
        numbers = dict(zip(per_position, torch.stack(list(per_position.values())).tolist()))
        # positions after the first rejection were never examined: show the chance they would have had
        uniforms, accept_chances = result.uniforms.tolist(), result.drafted_accept_probs.tolist()
        positions = []
        candidates = self._candidates([target, draft], drafted.ids)
        for i, (ids, (target_values, draft_values), (target_other, draft_other)) in enumerate(candidates):
            positions.append(PositionTrace(
                index=i, draft_token=drafted.ids[i], draft_text=token_text(drafted.ids[i]),
                accept_prob=accept_chances[i], uniform=uniforms[i] if i < len(uniforms) else None,
                verdict="accepted" if i < n_accepted else "rejected" if i == n_accepted else "unexamined",
                candidates=[Candidate(id=x, text=token_text(x), target_prob=a, draft_prob=b)
                            for x, a, b in zip(ids, target_values, draft_values)],
                target_other=target_other, draft_other=draft_other, **{k: v[i] for k, v in numbers.items()}))
        return StepTrace(step=step, gamma=gamma, kl_budget=self.config.kl_budget, positions=positions,
                         n_accepted=n_accepted, correction=self._correction_trace(target_probs, drafted, result),
                         emitted=self._emitted(result, kept), draft_ms=record.draft_s * 1e3,
                         target_ms=record.target_s * 1e3, verify_ms=(record.step_s - record.draft_s - record.target_s) * 1e3,
                         counters=Counters(**vars(self.counters)), record=record, temperature=self.config.temperature,
                         finished=self.finished, notice=self.notice if step == 1 else "",
                         rejected=self._rejected(drafted, result),
                         source=DraftSource(kind=self.drafter.kind, details=self.drafter.source(drafted)))

    def _correction_trace(self, target_probs, drafted: Drafted, result: sampling.Verification) -> Correction:
        """3. correct, as shown: the token added after the accepted drafts and the law it came from."""
        gamma, n_accepted, token_text = drafted.gamma, result.n_accepted, self.pair.token_text
        last, kind = result.tokens[-1], "bonus" if result.bonus else "resampled"
        target_row = target_probs[n_accepted]  # [V]
        draft_row = drafted.q(target_probs)[n_accepted] if n_accepted < gamma else torch.zeros_like(target_row)
        residual = sampling.residual_distribution(target_row, draft_row) if n_accepted < gamma else target_row
        [(ids, (final_values, target_values, draft_values, residual_values), (final_other, *_))] = self._candidates(
            [result.final_probs[None], target_row[None], draft_row[None], residual[None]], [last])
        return Correction(kind=kind, position=n_accepted, token=last, text=token_text(last),
                          candidates=[Candidate(id=x, text=token_text(x), target_prob=a, draft_prob=b, final_prob=f)
                                      for x, f, a, b in zip(ids, final_values, target_values, draft_values)],
                          final_other=final_other, residual_probs=residual_values)

    def _emitted(self, result: sampling.Verification, kept: list[int]) -> list[EmittedToken]:
        kinds = ["accepted"] * result.n_accepted + ["bonus" if result.bonus else "resampled"]
        return [EmittedToken(id=x, text=self.pair.token_text(x), kind=kinds[i], step=self.steps)
                for i, x in enumerate(kept)]

    def _rejected(self, drafted: Drafted, result: sampling.Verification) -> list[EmittedToken]:
        if result.n_accepted >= drafted.gamma:
            return []
        token = drafted.ids[result.n_accepted]
        return [EmittedToken(id=token, text=self.pair.token_text(token), kind="rejected", step=self.steps)]
