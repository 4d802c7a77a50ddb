"""Step-wise speculative decoding over real models (the target-only baseline and what every decoder shares
are in `base`).

One `SpeculativeDecoder.step()` is one round of the algorithm:
  1. draft    the drafter's proposal (the draft model: gamma cached forwards, one token each, sampled from
              the warped draft), tokens and q on the device
  2. verify   one cached target forward over the pending token and the drafts, its ids from the device
  3. correct  `sampling.verify_round`: accept a prefix, then resample at the first rejection or add the bonus
              token, vectorised over the positions; both KV caches are cropped back so no prefix is recomputed
The round stays on the device until one read at its end (`sampling.pack`: tokens, verdicts and, with traces on,
what the card shows). Randomness comes only from the decoder's own `torch.Generator(seed)`: a round's uniforms
are drawn in one call.
"""
from __future__ import annotations

import time

import torch

from ...core import sampling
from ...core.config import DecodeConfig
from ...core.trace import Counters, DraftSource, EmittedToken, StepRecord, StepTrace
from ..models.loading import ModelPair
from ..timing import Timer
from . import round_trace
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
        if isinstance(config, DecodeConfig) and config.gamma_auto and config.draft_length is None:
            raise ValueError("gamma auto stops by a rule at the pair's measured costs: build the config with "
                             "engine.serving.auto_gamma.resolve(pair, config) first")
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
        """One round; returns its StepTrace (None when config.record is off). The round stays on the device until
        its one read back to the host (`sampling.pack`), after the correction."""
        self._check_not_finished()
        gamma, device, timer = self.config.gamma, self.pair.device, Timer(self.pair.device)
        # the round's uniforms in one call: gamma for the drafter's draws, then gamma + 1 for verify and correct
        uniforms = torch.rand(2 * gamma + 1, generator=self.generator, device=device, dtype=torch.float64)
        start = timer.mark()
        drafted = self.drafter.propose(self._context(uniforms[:gamma]), gamma)    # 1. draft
        drafted_at = timer.mark()
        target_probs = self._verify(drafted)                                       # 2. verify   [k+1, V]
        verified_at = timer.mark()
        q = drafted.q(target_probs)                                                # [k, V]
        k = drafted.gamma
        rnd = sampling.verify_round(target_probs, q, drafted.tokens, uniforms[gamma: gamma + k + 1],
                                    kl_budget=self.config.kl_budget)               # 3. correct
        self.device_ids.write(len(self.tokens), rnd.tokens)
        shown = round_trace.round_tensors(target_probs, q, drafted.tokens, rnd, self.config.trace_top_k) \
            if self.config.record else {}
        packed = sampling.pack(n_accepted=rnd.n_accepted, tokens=rnd.tokens, drafts=drafted.tokens,
                               **round_trace.check_tensors(target_probs, q, rnd.drafted_draft_probs), **shown)
        end = timer.mark()
        read = packed.read()  # the round's one read back to the host
        round_trace.check_read(read)
        n = read["n_accepted"]
        result = round_trace.RoundResult(gamma=k, n_accepted=n, tokens=read["tokens"][: n + 1])
        kept = self._settle(result)
        timer.add("draft", start, drafted_at)
        timer.add("target", drafted_at, verified_at)
        timer.add("step", start, end)
        ms = timer.read()
        record = StepRecord(gamma=k, n_emitted=len(kept), draft_s=ms["draft"] / 1e3, target_s=ms["target"] / 1e3,
                            step_s=ms["step"] / 1e3, **counted_drafts(self.eos, result, k))
        self.records.append(record)
        self.counters.compute_s += record.step_s
        self.counters.draft_calls += drafted.forwards
        self.counters.target_calls += 1
        if not self.config.record:
            return None
        return self._trace(read, drafted, result, kept, record)

    def _context(self, uniforms: torch.Tensor | None = None) -> TokenContext:
        return TokenContext(ids=self.tokens, n_prompt=self.n_prompt, on_device=self.device_ids, uniforms=uniforms)

    def _verify(self, drafted: Drafted) -> torch.Tensor:
        """2. verify: one target forward over the pending token and the drafts, its inputs on the device."""
        pending = self.device_ids.buffer[self.target.seen: len(self.tokens)]  # [1]
        logits = self.target.forward(torch.cat([pending, drafted.tokens]), keep=drafted.gamma + 1)  # [k+1, V]
        return self.config.warp(logits)  # [k+1, V]

    def _settle(self, result: round_trace.RoundResult) -> list[int]:
        """Crop the caches to the accepted prefix, count the verdicts, append the new tokens (what was kept)."""
        keep = len(self.tokens) + result.n_accepted  # the new last token is pending
        self.target.crop_to(keep)
        self.drafter.crop(keep)
        self.counters.examined += result.n_examined
        self.counters.accepted += result.n_accepted
        return self._accept_new(result.tokens)

    # ------------------------------------------------------------------ trace

    def _trace(self, read: dict, drafted: Drafted, result: round_trace.RoundResult, kept: list[int],
               record: StepRecord) -> StepTrace:
        """The round as the card shows it, built on the host from the round's one read."""
        gamma, n_accepted, text, step = result.gamma, result.n_accepted, self.pair.token_text, self.steps
        k = min(self.config.trace_top_k, self.pair.vocab_size)
        return StepTrace(step=step, gamma=gamma, kl_budget=self.config.kl_budget,
                         positions=round_trace.positions(read, n_accepted, gamma, k, text), n_accepted=n_accepted,
                         correction=round_trace.correction(read, result, k, text),
                         emitted=self._emitted(result, kept), draft_ms=record.draft_s * 1e3,
                         target_ms=record.target_s * 1e3, verify_ms=(record.step_s - record.draft_s - record.target_s) * 1e3,
                         counters=Counters(**vars(self.counters)), record=record, temperature=self.config.temperature,
                         finished=self.finished, notice=self.notice if step == 1 else "",
                         rejected=self._rejected(read["drafts"], result),
                         source=DraftSource(kind=self.drafter.kind, details=self.drafter.source(drafted)),
                         draft_stop=drafted.stop)

    def _emitted(self, result: round_trace.RoundResult, kept: list[int]) -> list[EmittedToken]:
        kinds = ["accepted"] * result.n_accepted + ["bonus" if result.bonus else "resampled"]
        return [EmittedToken(id=x, text=self.pair.token_text(x), kind=kinds[i], step=self.steps)
                for i, x in enumerate(kept)]

    def _rejected(self, drafts: list[int], result: round_trace.RoundResult) -> list[EmittedToken]:
        if result.n_accepted >= result.gamma:
            return []
        token = drafts[result.n_accepted]
        return [EmittedToken(id=token, text=self.pair.token_text(token), kind="rejected", step=self.steps)]
