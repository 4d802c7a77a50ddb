"""Step-wise speculative decoding over real models, and the target-only baseline.

One `SpeculativeDecoder.step()` is one round of the algorithm:
  1. draft    gamma cached draft forwards, one new token each, sampled from the warped draft
  2. verify   one cached target forward over the gamma + 1 new positions
  3. correct  `sampling.verify`: accept a prefix, then resample at the first rejection or add
              the bonus token; both KV caches are cropped back so no prefix is ever recomputed
Randomness comes only from the decoder's own `torch.Generator(seed)`.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass

import torch

from . import sampling
from .models import ModelPair
from .trace import Candidate, Correction, Counters, EmittedToken, PositionTrace, StepTrace

MAX_PROMPT_CHARS = 20_000


@dataclass(frozen=True)
class DecodeConfig:
    """Every knob of a decoding run, validated in one place."""
    gamma: int = 4
    temperature: float = 1.0
    top_k: int | None = None      # None or 0: off
    top_p: float | None = None    # None or 1.0: off
    kl_budget: float = 0.0        # 0: exact speculative sampling; > 0: mentored decoding (lossy)
    max_new_tokens: int = 64
    seed: int = 0
    trace_top_k: int = 10         # bars per figure
    record: bool = True           # build a StepTrace per step (the benchmark's lean loop turns it off)

    def __post_init__(self):
        def bad(what):
            raise ValueError(f"{what} (got {self})")
        if not isinstance(self.gamma, int) or not 1 <= self.gamma <= 16:
            bad(f"gamma must be a whole number in 1..16, not {self.gamma!r}")
        if not isinstance(self.temperature, (int, float)) or not 0 <= self.temperature <= 100 or math.isnan(self.temperature):
            bad(f"temperature must be a number in [0, 100], not {self.temperature!r}")
        if self.top_k is not None and (not isinstance(self.top_k, int) or self.top_k < 0):
            bad(f"top_k must be a whole number >= 0 (0 = off), not {self.top_k!r}")
        if self.top_p is not None and (not isinstance(self.top_p, (int, float)) or not 0 < self.top_p <= 1):
            bad(f"top_p must be in (0, 1] (1 = off), not {self.top_p!r}")
        if not isinstance(self.kl_budget, (int, float)) or not 0 <= self.kl_budget < math.inf:
            bad(f"kl_budget must be a finite number >= 0, not {self.kl_budget!r}")
        if not isinstance(self.max_new_tokens, int) or not 1 <= self.max_new_tokens <= 4096:
            bad(f"max_new_tokens must be a whole number in 1..4096, not {self.max_new_tokens!r}")
        if not isinstance(self.seed, int) or not 0 <= self.seed < 2**63:
            bad(f"seed must be a whole number >= 0, not {self.seed!r}")
        if not isinstance(self.trace_top_k, int) or not 1 <= self.trace_top_k <= 50:
            bad(f"trace_top_k must be in 1..50, not {self.trace_top_k!r}")

    def warp(self, logits: torch.Tensor) -> torch.Tensor:
        return sampling.warp(logits, self.temperature, self.top_k or None, self.top_p)


class DecodingFinished(RuntimeError):
    """step() was called after EOS or max_new_tokens."""


def prepare_prompt(pair: ModelPair, prompt: str, config: DecodeConfig) -> tuple[list[int], str]:
    """Token ids of the prompt, left-truncated to leave room in the context window; and a notice."""
    if not isinstance(prompt, str) or not prompt.strip():
        raise ValueError("the prompt is empty: type some text to continue")
    if len(prompt) > MAX_PROMPT_CHARS:
        raise ValueError(f"the prompt has {len(prompt):,} characters; the limit is {MAX_PROMPT_CHARS:,}")
    prompt = prompt.encode("utf-8", "replace").decode("utf-8")  # lone surrogates cannot be tokenised
    ids = pair.encode(prompt)
    if not ids:
        raise ValueError("the prompt produced no tokens")
    room = pair.context_window - config.max_new_tokens - config.gamma - 1
    if room < 1:
        raise ValueError(f"max_new_tokens {config.max_new_tokens} + gamma {config.gamma} does not fit the "
                         f"{pair.context_window}-token context window; ask for fewer new tokens")
    if len(ids) > room:
        return ids[-room:], f"prompt truncated from the left to its last {room} of {len(ids)} tokens to fit the context window"
    return ids, ""


class _CachedModel:
    """A causal LM with its KV cache: feed only the tokens it has not seen yet."""

    def __init__(self, model, vocab_size: int):
        self.model, self.vocab_size = model, vocab_size
        self.cache = None
        self.seen = 0  # tokens whose keys/values are in the cache
        self.calls = 0

    @torch.inference_mode()
    def forward(self, new_ids: list[int]) -> torch.Tensor:
        """Logits [len(new_ids), V] for the positions of new_ids; extends the cache."""
        ids = torch.tensor([new_ids], device=self.model.device)
        out = self.model(input_ids=ids, past_key_values=self.cache, use_cache=True)
        self.cache = out.past_key_values
        self.seen += len(new_ids)
        self.calls += 1
        return out.logits[0, :, : self.vocab_size]  # [n, V]: padded embedding rows masked off

    def crop_to(self, length: int) -> None:
        if length < self.seen:
            self.cache.crop(length - self.seen)  # transformers 5: a negative count removes tokens
            self.seen = length


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


class _Decoder:
    """What both decoders share: prompt, token list, generator, prefill, stopping."""

    def __init__(self, pair: ModelPair, prompt: str, config: DecodeConfig):
        if not isinstance(config, DecodeConfig):
            raise TypeError("config must be a DecodeConfig")
        self.pair, self.config = pair, config
        self.prompt_ids, self.notice = prepare_prompt(pair, prompt, config)
        self.tokens = list(self.prompt_ids)
        self.generator = torch.Generator(device=pair.device).manual_seed(config.seed)
        self.counters = Counters()
        self.finished = False
        self.eos = pair.tokenizer.eos_token_id
        self.target = _CachedModel(pair.target, pair.vocab_size)
        t0 = time.perf_counter()
        if len(self.tokens) > 1:  # the last prompt token stays pending: its logits start step 1
            self.target.forward(self.tokens[:-1])
        _sync(pair.device)
        self.prefill_s = time.perf_counter() - t0

    @property
    def generated_ids(self) -> list[int]:
        return self.tokens[len(self.prompt_ids):]

    @property
    def text(self) -> str:
        return self.pair.tokenizer.decode(self.generated_ids, skip_special_tokens=True)

    def _accept_new(self, new_ids: list[int]) -> list[int]:
        """Append new tokens, cut at EOS and max_new_tokens; returns what was kept."""
        room = self.config.max_new_tokens - len(self.generated_ids)
        kept = new_ids[:room]
        if self.eos is not None and self.eos in kept:
            kept = kept[: kept.index(self.eos) + 1]
            self.finished = True
        self.tokens.extend(kept)
        self.counters.tokens += len(kept)
        if len(self.generated_ids) >= self.config.max_new_tokens:
            self.finished = True
        return kept

    def _check_not_finished(self):
        if self.finished:
            raise DecodingFinished(f"generation has finished ({len(self.generated_ids)} tokens); press Reset to start again")

    def run(self):
        """Step until EOS or max_new_tokens; returns the list of step results."""
        out = []
        while not self.finished:
            out.append(self.step())
        return out

    def stats(self) -> dict:
        c = self.counters
        return {"tokens": c.tokens, "target_calls": c.target_calls, "draft_calls": c.draft_calls,
                "tokens_per_target_call": c.tokens / c.target_calls if c.target_calls else 0.0,
                "wall_s": c.compute_s}


class TargetOnlyDecoder(_Decoder):
    """The baseline: one token per cached target forward, same warping and seed handling."""

    def step(self) -> EmittedToken:
        self._check_not_finished()
        t0 = time.perf_counter()
        logits = self.target.forward(self.tokens[self.target.seen:])[-1]  # [V]
        token = sampling.sample(self.config.warp(logits), self.generator)
        _sync(self.pair.device)
        self.counters.target_calls += 1
        self.counters.compute_s += time.perf_counter() - t0
        step = self.counters.target_calls
        kept = self._accept_new([token])
        return EmittedToken(id=token, text=self.pair.token_text(token) if kept else "", kind="target", step=step)


class SpeculativeDecoder(_Decoder):
    """Speculative sampling (kl_budget = 0) or mentored decoding (kl_budget > 0), one round per step()."""

    def __init__(self, pair: ModelPair, prompt: str, config: DecodeConfig):
        super().__init__(pair, prompt, config)
        self.draft = _CachedModel(pair.draft, pair.vocab_size)
        t0 = time.perf_counter()
        if len(self.tokens) > 1:
            self.draft.forward(self.tokens[:-1])
        _sync(pair.device)
        self.prefill_s += time.perf_counter() - t0
        self.accepted_at = [0] * config.gamma  # vLLM's per-position acceptance counts
        self.steps = 0

    def step(self) -> StepTrace | None:
        self._check_not_finished()
        cfg, gamma = self.config, self.config.gamma
        t0 = time.perf_counter()

        # 1. draft: gamma tokens, one cached forward each
        drafts, draft_rows = [], []
        pending = self.tokens[self.draft.seen:]  # 1 token, or 2 after a bonus the draft never saw
        for _ in range(gamma):
            q = cfg.warp(self.draft.forward(pending)[-1])  # [V]
            token = sampling.sample(q, self.generator)
            drafts.append(token)
            draft_rows.append(q)
            pending = [token]
        draft_probs = torch.stack(draft_rows)  # [gamma, V]
        _sync(self.pair.device)
        t1 = time.perf_counter()

        # 2. verify: one target forward over the pending token and the gamma drafts
        logits = self.target.forward(self.tokens[self.target.seen:] + drafts)[-(gamma + 1):]  # [gamma+1, V]
        target_probs = cfg.warp(logits)  # [gamma+1, V]
        _sync(self.pair.device)
        t2 = time.perf_counter()

        # 3. correct: accept a prefix, resample or add the bonus token, crop both caches
        result = sampling.verify(target_probs, draft_probs, torch.tensor(drafts, device=draft_probs.device),
                                 kl_budget=cfg.kl_budget, generator=self.generator)
        n = result.n_accepted
        keep = len(self.tokens) + n  # prompt + generated + accepted drafts; the new last token is pending
        self.target.crop_to(keep)
        self.draft.crop_to(keep)
        self.steps += 1
        for i in range(n):
            self.accepted_at[i] += 1
        c = self.counters
        c.target_calls += 1
        c.draft_calls += gamma
        c.drafted += gamma
        c.examined += result.n_examined
        c.accepted += n
        kept = self._accept_new(result.tokens)
        t3 = time.perf_counter()
        c.compute_s += t3 - t0
        if not cfg.record:
            return None
        trace = self._trace(target_probs, draft_probs, drafts, result, kept)
        trace.draft_ms, trace.target_ms = (t1 - t0) * 1e3, (t2 - t1) * 1e3
        trace.verify_ms = (time.perf_counter() - t2) * 1e3
        return trace

    # ------------------------------------------------------------------ trace

    def _candidates(self, rows: list[torch.Tensor], must: list[int]) -> list[tuple[list[int], list[list[float]], list[float]]]:
        """rows: R distributions [P, V] over the same P positions. Per position: the union of the first
        two rows' top-k and the `must` token, ordered by the first row; each row's values there; and
        each row's mass outside them (the "other" bar)."""
        k = min(self.config.trace_top_k, self.pair.vocab_size)
        stacked = torch.stack(rows, 1)  # [P, R, V]
        top = stacked[:, :2].topk(k, dim=-1).indices.flatten(1).tolist()  # [P, 2k]: the first two rows' top-k
        out = []
        for pos, ids in enumerate(top):
            ids = list(dict.fromkeys(ids + [must[pos]]))
            values = stacked[pos][:, ids]  # [R, n]
            order = values[0].argsort(descending=True).tolist()
            ids = [ids[i] for i in order]
            values = values[:, order]
            out.append((ids, values.tolist(), (1 - values.sum(-1)).clamp_min(0).tolist()))
        return out

    def _trace(self, target_probs, draft_probs, drafts, result, kept) -> StepTrace:
        gamma, n, text = self.config.gamma, result.n_accepted, self.pair.token_text
        p, q = target_probs[:gamma], draft_probs  # [gamma, V]
        idx = torch.arange(gamma, device=p.device)
        drafted = torch.tensor(drafts, device=p.device)
        numbers = torch.stack([q[idx, drafted], p[idx, drafted], sampling.tv_distance(p, q),
                               sampling.kl_divergence(p, q), sampling.acceptance_rate(p, q)]).tolist()
        # positions after the first rejection were never examined: show the chance they would have had
        uniforms, accepts = result.uniforms.tolist(), result.drafted_accept_probs.tolist()
        positions = []
        for i, (ids, (tp, dp), (t_other, d_other)) in enumerate(self._candidates([p, q], drafts)):
            verdict = "accepted" if i < n else "rejected" if i == n else "unexamined"
            positions.append(PositionTrace(
                index=i, draft_token=drafts[i], draft_text=text(drafts[i]), draft_prob=numbers[0][i],
                target_prob=numbers[1][i], accept_prob=accepts[i], uniform=uniforms[i] if i < len(uniforms) else None,
                verdict=verdict, candidates=[Candidate(x, text(x), a, b) for x, a, b in zip(ids, tp, dp)],
                target_other=t_other, draft_other=d_other, tv=numbers[2][i], kl=numbers[3][i], overlap=numbers[4][i]))
        last = result.tokens[-1]
        kind = "bonus" if result.bonus else "resampled"
        row_p = target_probs[n]
        row_q = draft_probs[n] if n < gamma else torch.zeros_like(row_p)
        [(ids, (fp, tp, dp), (f_other, _, _))] = self._candidates([result.final_probs[None], row_p[None], row_q[None]], [last])
        correction = Correction(kind=kind, position=n, token=last, text=text(last),
                                candidates=[Candidate(x, text(x), a, b, f) for x, f, a, b in zip(ids, fp, tp, dp)],
                                final_other=f_other)
        kinds = ["accepted"] * n + [kind]
        emitted = [EmittedToken(x, text(x), kinds[i], self.steps) for i, x in enumerate(kept)]
        rejected = [EmittedToken(drafts[n], text(drafts[n]), "rejected", self.steps)] if n < gamma else []
        return StepTrace(step=self.steps, gamma=gamma, kl_budget=self.config.kl_budget, positions=positions,
                         n_accepted=n, correction=correction, emitted=emitted, draft_ms=0.0, target_ms=0.0,
                         verify_ms=0.0, counters=Counters(**vars(self.counters)), finished=self.finished,
                         notice=self.notice if self.steps == 1 else "", rejected=rejected)

    def stats(self) -> dict:
        c = self.counters
        return {**super().stats(),
                # alpha of Leviathan et al.: the share of tested draft tokens that were accepted
                "acceptance_rate": c.accepted / c.examined if c.examined else 0.0,
                # vLLM's draft acceptance rate: accepted over all drafted, untested ones included
                "draft_acceptance_rate": c.accepted / c.drafted if c.drafted else 0.0,
                "mean_acceptance_length": c.tokens / self.steps if self.steps else 0.0,
                "per_position_acceptance": [a / self.steps if self.steps else 0.0 for a in self.accepted_at]}
