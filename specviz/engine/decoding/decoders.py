"""Step-wise speculative decoding over real models (the target-only baseline and what every decoder shares
are in `base`).

One `SpeculativeDecoder.step()` is one round of the algorithm, as two regions and one read (`round_regions`):
  1. draft    the drafter's proposal (the draft model: gamma cached forwards, one token each, raced from the
              warped draft), tokens and q on the device
  2. verify   one cached target forward over the pending token and the drafts, its ids from the device
  3. correct  `sampling.verify_round`: accept a prefix, then race the residual at the first rejection or the
              bonus token, vectorised over the positions; the emitted tokens written to the ids on the device
Then the round's one read (`sampling.pack`: tokens, verdicts and, with traces on, what the card shows), and both KV
caches are moved back to the accepted prefix (one fill each on the static cache), so no prefix is recomputed.
Randomness comes only from the decoder's own `torch.Generator(seed)`: each region draws its uniforms in one call.
"""
from __future__ import annotations

import dataclasses
import time

import torch

from ...core import sampling
from ...core.config import DecodeConfig
from ...core.trace import Counters, DraftSource, EmittedToken, StepRecord, StepTrace
from .. import settings
from ..models.loading import ModelPair
from ..timing import Timer
from . import round_regions, round_trace
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


def followed_text(pair: ModelPair, config: DecodeConfig, follow: list[int] | None) -> tuple[torch.Tensor | None, float]:
    """The text a decoder follows (`sampling.follow_round`) on the device, padded past its end by a round's
    positions, and how far a round may read it: past its EOS anything (nothing after it is kept), else only its own
    tokens. (None, inf) when it samples."""
    if follow is None:
        return None, float("inf")
    if not isinstance(config, DecodeConfig) or config.record or config.kl_budget > 0 or config.drafts > 1:
        raise ValueError("a followed text decides one chain's rounds, without uniforms to show or a plan to keep: "
                         "follow with record off, kl_budget 0 and one draft")
    if not all(isinstance(t, int) and 0 <= t < pair.vocab_size for t in follow):
        raise ValueError(f"a followed text is token ids in 0..{pair.vocab_size - 1}")
    reads = float("inf") if pair.tokenizer.eos_token_id in follow else len(follow)
    return torch.tensor([*follow, *[0] * (config.gamma + 1)], dtype=torch.long, device=pair.device), reads


class SpeculativeDecoder(Decoder):
    """Speculative sampling (kl_budget = 0) or mentored decoding (kl_budget > 0), one round per step().

    One chain, proposed by the decoder's drafter (`drafters`: the draft model, prompt lookup, ...). Several drafts at
    once (config.drafts > 1) are `tree_decoder.TreeDecoder`'s: `factory.make_decoder` picks the decoder and the
    drafter a config asks for, and this class refuses a config it would not honour."""

    def __init__(self, pair: ModelPair, prompt: str, config: DecodeConfig, *, resume: DecoderState | None = None,
                 static_cache: bool | None = None, drafter: type[Drafter] | None = None,
                 follow: list[int] | None = None):
        self.follow, self.follow_reads = followed_text(pair, config, follow)
        if type(self) is SpeculativeDecoder and isinstance(config, DecodeConfig) and config.drafts > 1:
            raise ValueError("SpeculativeDecoder drafts one chain; this config asks for several drafts: build it "
                             "with make_decoder(pair, prompt, config)")
        if isinstance(config, DecodeConfig) and config.gamma_auto and config.draft_length is None:
            raise ValueError("gamma auto stops by a rule at the pair's measured costs: build the config with "
                             "engine.serving.auto_gamma.resolve(pair, config) first")
        self.drafter_class = drafter or (drafter_class(config) if isinstance(config, DecodeConfig) else None)
        super().__init__(pair, prompt, config, resume=resume, static_cache=static_cache)
        self.drafter: Drafter = self.drafter_class(pair, config, self.target, self.cache_options, self.generator)
        if resume is not None and resume.learned:  # a drafter that learns from the text goes on where it was
            self.drafter.relearn(resume.learned)
        t0 = time.perf_counter()
        self.drafter.prefill(self._context())
        sync_device(pair.device)
        self.prefill_s += time.perf_counter() - t0
        self.capture_s += self.drafter.capture()
        if error := self.drafter.graph_error():
            self.graphs_off = "; ".join(filter(None, (self.graphs_off, f"draft: {error}")))
        self.layouts: dict[int, tuple] = {}  # drafts proposed -> the read's layout (`sampling.pack`)
        self.aranges: dict[int, torch.Tensor] = {}  # k -> [k+1] 0 .. k on the device
        self.region: round_regions.Region | None = None  # the verify region, recorded (CUDA graphs)
        self.region_reads: torch.Tensor | None = None  # the draft loop's q buffer the recorded verify region reads
        self.regions_off = self._capture_regions()  # why the round's regions run eagerly ('' when recorded)

    def _target_sizes(self) -> list[int]:
        return self.drafter_class.verify_sizes(self.config.gamma)

    def _needs_target_features(self) -> bool:
        return self.drafter_class.reads_target_features(self.pair)

    @property
    def cache_kinds(self) -> dict[str, str]:
        return {**self.drafter.cache_kinds(), **super().cache_kinds}

    def held_bytes(self) -> int:
        return super().held_bytes() + self.drafter.held_bytes()

    def state(self) -> DecoderState:
        return dataclasses.replace(super().state(), learned=self.drafter.learned())

    def fork(self, seed: int):
        twin = super().fork(seed)
        twin.drafter = self.drafter.fork(twin.target, twin.generator)
        # the regions were recorded against this decoder's buffers, caches and generator: the twin runs them eagerly
        twin.region, twin.region_reads = None, None
        twin.regions_off = "a fork runs its regions eagerly"
        return twin

    @property
    def steps(self) -> int:
        return len(self.records)

    def step(self) -> StepTrace | None:
        """One round; returns its StepTrace (None when config.record is off). The round stays on the device until
        its one read back to the host (`sampling.pack`), after the correction."""
        self._check_not_finished()
        timer = Timer(self.pair.device)
        start = timer.mark()
        drafted = self.drafter.propose(self._context(), self.config.gamma)        # 1. draft
        drafted_at = timer.mark()
        if self.region is not None and drafted.probs is self.region_reads:
            packed, verified_at = self.region.replay(), None                     # 2. verify, 3. correct: replayed
        else:
            packed, verified_at = self.verify_region(drafted, timer)              # 2. verify, 3. correct
        end = timer.mark()
        read = packed.read()  # the round's one read back to the host
        n, k = read["n_accepted"], len(read["drafts"])
        self.layouts.setdefault(k, packed.layout)
        round_trace.check_read(read)
        result = round_trace.RoundResult(gamma=k, n_accepted=n, tokens=read["drafts"][:n] + [read["last"]])
        kept = self._settle(result)
        timer.add("draft", start, drafted_at)
        timer.add("target", drafted_at, verified_at or end)
        timer.add("step", start, end)
        ms = timer.read()
        record = StepRecord(gamma=k, n_emitted=len(kept), draft_s=ms["draft"] / 1e3, target_s=ms["target"] / 1e3,
                            step_s=ms["step"] / 1e3, auto=self.config.gamma_auto, **counted_drafts(self.eos, result, k))
        self.records.append(record)
        self.counters.compute_s += record.step_s
        self.counters.draft_calls += drafted.forwards
        self.counters.target_calls += 1
        if not self.config.record:
            return None
        return self._trace(read, drafted, result, kept, record)

    def verify_region(self, drafted: Drafted, timer: Timer | None = None) -> tuple[sampling.Packed, object]:
        """2. verify and 3. correct, as one region (`round_regions`): the target's forward over the pending token
        (read from the device at the target's own position) and the drafts, the decision, the emitted tokens written
        to the ids on the device, the trace's tensors and the pack. Returns the pack and, with a `timer` (eager
        runs), the mark between the forward and the decision."""
        k, ids, vocab = drafted.gamma, self.device_ids.buffer, self.pair.vocab_size
        inputs = torch.cat([self.target.unseen(ids, 1), drafted.tokens])                       # [k+1]
        target_probs = self.config.warp(self.target.forward(inputs, keep=k + 1))               # [k+1, V]
        verified_at = timer.mark() if timer is not None else None
        q = drafted.q(target_probs)                                                             # [k, V]
        uniforms = sampling.round_uniforms(k, vocab, self.generator, target_probs.device)     # [k + V]
        rnd = sampling.verify_round(target_probs, q, drafted.tokens, uniforms, kl_budget=self.config.kl_budget)
        if self.follow is not None:  # a followed text's tokens decide (`sampling.follow_round`: the same law)
            rnd = sampling.follow_round(rnd, self._text_here(drafted))
        drafts_then = inputs.roll(-1)                                                          # [k+1]
        # the drafts up to the first rejection, then the last token, where the next round's forwards read them
        self.target.write_ids(ids, torch.where(self._steps(k) < rnd.n_accepted, drafts_then, rnd.last), back=k)
        shown = round_trace.round_tensors(target_probs, q, rnd, self.config.trace_top_k, drafts_then) \
            if self.config.record else {}
        packed = sampling.pack(self.layouts.get(k), n_accepted=rnd.n_accepted, last=rnd.last, drafts=drafted.tokens,
                               q_x=rnd.drafted_draft_probs, **round_trace.check_tensors(target_probs, q), **shown)
        return packed, verified_at

    def _text_here(self, drafted: Drafted) -> torch.Tensor:
        """[k+1] the followed text's tokens at this round's positions."""
        if drafted.probs is not None:
            raise ValueError(f"a followed text decides only a proposal made with certainty (q one-hot: prompt "
                             f"lookup); the {self.drafter.kind} drafter proposed from a draft law this round")
        at = len(self.tokens) - self.n_prompt
        if at + drafted.gamma + 1 > self.follow_reads:
            raise ValueError(f"the followed text has {self.follow_reads} tokens and no EOS; this round reads up to "
                             f"token {at + drafted.gamma + 1}: give max_new_tokens + gamma + 1 tokens, or its EOS")
        return self.follow[at: at + drafted.gamma + 1]

    def _steps(self, k: int) -> torch.Tensor:
        """[k+1] 0 .. k on the device, made once."""
        if k not in self.aranges:
            self.aranges[k] = torch.arange(k + 1, device=self.pair.device)
        return self.aranges[k]

    def _capture_regions(self) -> str:
        """On CUDA with graphs: record the draft loop and the verify region (`round_regions`); why not, or ''."""
        if not settings.current().cuda_graph_regions:
            return "SPECVIZ_CUDA_GRAPHS=forwards"
        if self.follow is not None:
            return "a followed text is read at the round's position"
        if self.config.kl_budget > 0:
            return "mentored decoding plans on the host"
        if self.config.gamma_auto:  # where its draft loop stops is read on the host: each forward a graph instead
            return "gamma auto stops its draft loop on the host"
        capture_loop = getattr(self.drafter, "capture_loop", None)
        if capture_loop is None:
            return f"the {self.drafter.kind} drafter proposes on the host"
        if why := round_regions.usable([self.target]):
            return why
        graphs = round_regions.recorder(self.generator)
        why, seconds = capture_loop(self.device_ids.buffer, self.config.gamma, graphs)
        self.capture_s += seconds
        if why:
            return why
        tokens, probs = self.drafter.buffers[self.config.gamma]
        drafted = Drafted(tokens=tokens, probs=probs, forwards=self.config.gamma)
        self.region, why, seconds = round_regions.try_capture(lambda: self.verify_region(drafted)[0], [self.target],
                                                              self.generator, graphs)
        self.capture_s += seconds
        self.region_reads = probs if self.region is not None else None
        return why

    def _context(self) -> TokenContext:
        return TokenContext(ids=self.tokens, n_prompt=self.n_prompt, on_device=self.device_ids)

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
