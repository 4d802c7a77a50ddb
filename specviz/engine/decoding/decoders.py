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
from dataclasses import dataclass

import torch

from ...core import sampling
from ...core.config import DecodeConfig
from ...core.trace import Candidate, Correction, Counters, EmittedToken, PositionTrace, StepRecord, StepTrace
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
from .feature_draft import cached_draft, reads_features

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


@dataclass
class Drafted:
    """One round's drafts: what the tree and lookup decoders build on too."""
    tokens: list[int]            # [gamma]
    probs: torch.Tensor          # [gamma, V] the warped draft distributions they were drawn from


class SpeculativeDecoder(Decoder):
    """Speculative sampling (kl_budget = 0) or mentored decoding (kl_budget > 0), one round per step().

    One chain drafted by the draft model. Several drafts at once (config.drafts > 1) are `tree_decoder.TreeDecoder`'s,
    drafts copied by prompt lookup (config.drafter "lookup") `lookup_decoder.LookupDecoder`'s: `factory.make_decoder`
    picks the one a config asks for, and this class refuses a config it would not honour."""

    def __init__(self, pair: ModelPair, prompt: str, config: DecodeConfig, *, resume: DecoderState | None = None,
                 static_cache: bool | None = None):
        if type(self) is SpeculativeDecoder and isinstance(config, DecodeConfig) and (
                config.drafts > 1 or config.drafter == "lookup"):
            raise ValueError("SpeculativeDecoder drafts one chain with the draft model; this config asks for "
                             f"{'several drafts' if config.drafts > 1 else 'prompt lookup'}: build it with "
                             "make_decoder(pair, prompt, config)")
        super().__init__(pair, prompt, config, resume=resume, static_cache=static_cache)
        self.draft = cached_draft(pair.draft, pair.vocab_size, self.target, **self.cache_options)
        self.prefill_s += self._prefill(self.draft)
        # a plain draft's first call covers 1 token, or 2 after a bonus; a feature draft's covers the
        # tokens accepted in the last round, recomputed from the target's features, and the pending one
        gamma = self.config.gamma
        self.capture_s += self.draft.capture(range(1, gamma + 2) if reads_features(pair.draft) else [1, 2])
        self._note_graph_error("draft", self.draft)

    def _target_sizes(self) -> list[int]:
        return [self.config.gamma + 1]  # every verify: the pending token and gamma drafts

    def _needs_target_features(self) -> bool:
        return reads_features(self.pair.draft)

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
        record = StepRecord(gamma=len(drafted.tokens), n_emitted=len(kept), draft_s=t1 - t0, target_s=t2 - t1,
                            step_s=t3 - t0, **counted_drafts(self.eos, result, len(drafted.tokens)))
        self.records.append(record)
        self.counters.compute_s += record.step_s
        if not self.config.record:
            return None
        return self._trace(target_probs, drafted, result, kept, record)

    def _draft_warp(self, logits: torch.Tensor) -> torch.Tensor:
        """The draft's sampling law: the run's warping, as for the target (tests override it to
        plant a defect, such as a draft run at another temperature)."""
        return self.config.warp(logits)

    def _draft(self) -> Drafted:
        """1. draft: gamma tokens, one cached forward each, sampled from the warped draft."""
        tokens, rows = [], []
        pending = self.tokens[self.draft.seen:]  # 1 token, or 2 after a bonus the draft never saw
        for _ in range(self.config.gamma):
            probs = self._draft_warp(self.draft.forward(pending, keep=1)[-1])  # [V]
            token = sampling.sample(probs, self.generator)
            tokens.append(token)
            rows.append(probs)
            pending = [token]
        sync_device(self.pair.device)
        self.counters.draft_calls += self.config.gamma
        return Drafted(tokens=tokens, probs=torch.stack(rows))  # [gamma, V]

    def _verify(self, drafted: Drafted) -> torch.Tensor:
        """2. verify: one target forward over the pending token and the gamma drafts."""
        gamma = len(drafted.tokens)  # config.gamma, or fewer where a lookup found fewer
        logits = self.target.forward(self.tokens[self.target.seen:] + drafted.tokens, keep=gamma + 1)  # [gamma+1, V]
        target_probs = self.config.warp(logits)  # [gamma+1, V]
        sync_device(self.pair.device)
        self.counters.target_calls += 1
        return target_probs

    def _correct(self, target_probs: torch.Tensor, drafted: Drafted) -> tuple[sampling.Verification, list[int]]:
        """3. correct: accept a prefix, resample or add the bonus token, crop both caches back."""
        result = sampling.verify(target_probs, drafted.probs, torch.tensor(drafted.tokens, device=drafted.probs.device),
                                 kl_budget=self.config.kl_budget, generator=self.generator)
        return result, self._settle(result)

    def _settle(self, result: sampling.Verification) -> list[int]:
        """Crop the caches to the accepted prefix, count the verdicts, append the new tokens (what was kept)."""
        self._crop_caches(len(self.tokens) + result.n_accepted)  # the new last token is pending
        self.counters.examined += result.n_examined
        self.counters.accepted += result.n_accepted
        return self._accept_new(result.tokens)

    def _crop_caches(self, keep: int) -> None:
        self.target.crop_to(keep)
        self.draft.crop_to(keep)

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
        gamma, n_accepted, token_text, step = len(drafted.tokens), result.n_accepted, self.pair.token_text, self.steps
        target, draft = target_probs[:gamma], drafted.probs  # [gamma, V]
        tokens = torch.tensor(drafted.tokens, device=target.device)  # [gamma]
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
        candidates = self._candidates([target, draft], drafted.tokens)
        for i, (ids, (target_values, draft_values), (target_other, draft_other)) in enumerate(candidates):
            positions.append(PositionTrace(
                index=i, draft_token=drafted.tokens[i], draft_text=token_text(drafted.tokens[i]),
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
                         rejected=self._rejected(drafted, result), draft_reads_target=reads_features(self.pair.draft))

    def _correction_trace(self, target_probs, drafted: Drafted, result: sampling.Verification) -> Correction:
        """3. correct, as shown: the token added after the accepted drafts and the law it came from."""
        gamma, n_accepted, token_text = len(drafted.tokens), result.n_accepted, self.pair.token_text
        last, kind = result.tokens[-1], "bonus" if result.bonus else "resampled"
        target_row = target_probs[n_accepted]  # [V]
        draft_row = drafted.probs[n_accepted] if n_accepted < gamma else torch.zeros_like(target_row)
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
        if result.n_accepted >= len(drafted.tokens):
            return []
        token = drafted.tokens[result.n_accepted]
        return [EmittedToken(id=token, text=self.pair.token_text(token), kind="rejected", step=self.steps)]
