"""What every decoder shares (prompt, token list, generator, KV caches and prefill, stopping, plain-data
state for a resume) and the target-only baseline.

Randomness comes only from the decoder's own `torch.Generator(seed)`. A decoder's progress can leave as plain
data (`state()`) and resume elsewhere (`resume=`), rebuilding its KV caches from the token ids: what ZeroGPU's
process boundary needs.
"""
from __future__ import annotations

import copy
import time
from dataclasses import dataclass, field

import torch

from ...core import sampling
from ...core.config import DecodeConfig
from ...core.trace import Counters, EmittedToken, StepRecord
from ..caches.cache import CachedModel
from ..caches.static_cache import plan as static_plan
from ..caches.static_cache import unsupported_reason
from ..memory import held_bytes
from ..models.loading import ModelPair
from ..models.policy import prompt_token_limit
from ..timing import Timer
from .drafting import DeviceIds, cache_kind

__all__ = ["Decoder", "DecoderState", "DecodingFinished", "TargetOnlyDecoder", "check_prompt", "clean_text",
           "prepare_prompt", "sync_device"]

MAX_PROMPT_CHARS = 20_000


class DecodingFinished(RuntimeError):
    """step() was called after EOS or max_new_tokens."""


def clean_text(text: str) -> str:
    """Text that can be tokenised and sent back to a browser: lone surrogates become U+FFFD (a pair of
    surrogates, as some JSON decoders leave them, becomes the character it encodes)."""
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")


def check_prompt(prompt: str) -> None:
    """ValueError for an empty or oversized prompt (before any model is touched)."""
    if not isinstance(prompt, str) or not prompt.strip():
        raise ValueError("the prompt is empty: type some text to continue")
    if len(prompt) > MAX_PROMPT_CHARS:
        raise ValueError(f"the prompt has {len(prompt):,} characters; the limit is {MAX_PROMPT_CHARS:,}")


def prepare_prompt(pair: ModelPair, prompt: str, config: DecodeConfig) -> tuple[list[int], str]:
    """Token ids of the prompt, left-truncated to leave room in the context window; and a notice."""
    check_prompt(prompt)
    ids = pair.encode(clean_text(prompt))
    if not ids:
        raise ValueError("the prompt produced no tokens")
    limit = prompt_token_limit(pair.ref)
    if len(ids) > limit:  # refused before any forward: the prefill's cost grows with the prompt's tokens
        raise ValueError(f"the prompt is {len(ids):,} tokens for this pair; the limit is {limit:,} tokens "
                         "(SPECVIZ_MAX_PROMPT_TOKENS)")
    room = pair.context_window - config.max_new_tokens - config.gamma - 1
    if room < 1:
        raise ValueError(f"max_new_tokens {config.max_new_tokens} + gamma {config.gamma} does not fit the "
                         f"{pair.context_window}-token context window; ask for fewer new tokens")
    if len(ids) > room:
        return ids[-room:], f"prompt truncated from the left to its last {room} of {len(ids)} tokens to fit the context window"
    return ids, ""


def sync_device(device: torch.device) -> None:
    """Wait for the device's queued work (CUDA), so that a timer read after it counts the work."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _generator_bytes(generator: torch.Generator) -> bytes:
    return generator.get_state().numpy().tobytes()


@dataclass
class DecoderState:
    """A decoder's progress as plain data: token ids, its generator's state, counters, records."""
    tokens: list[int]
    n_prompt: int
    notice: str
    generator: bytes
    counters: Counters
    finished: bool
    records: list[StepRecord] = field(default_factory=list)  # speculative steps
    call_s: list[float] = field(default_factory=list)        # baseline forwards
    learned: dict = field(default_factory=dict)  # what the drafter learned from the text so far (`Drafter.learned`)


class Decoder:
    """What every decoder shares: prompt, token list, generator, caches and prefill, stopping."""

    static_ok = True  # False where several rows share a cache (several drafts): those need the dynamic one

    def __init__(self, pair: ModelPair, prompt: str, config: DecodeConfig, *, resume: DecoderState | None = None,
                 static_cache: bool | None = None, prefilled: Decoder | None = None):
        if not isinstance(config, DecodeConfig):
            raise TypeError("config must be a DecodeConfig")
        self.pair, self.config = pair, config
        self.generator = torch.Generator(device=pair.device).manual_seed(config.seed)
        self.eos = pair.tokenizer.eos_token_id
        if resume is None:
            prompt_ids, self.notice = ((prefilled.prompt_ids, prefilled.notice) if prefilled is not None
                                       else prepare_prompt(pair, prompt, config))
            self.tokens, self.n_prompt = list(prompt_ids), len(prompt_ids)
            self.counters, self.finished = Counters(), False
            self.records: list[StepRecord] = []
            self.call_s: list[float] = []
        else:
            self.tokens, self.n_prompt, self.notice = list(resume.tokens), resume.n_prompt, resume.notice
            self.generator.set_state(torch.frombuffer(bytearray(resume.generator), dtype=torch.uint8))
            self.counters, self.finished = Counters(**vars(resume.counters)), resume.finished
            self.records, self.call_s = list(resume.records), list(resume.call_s)
        # the ids on the device too, room for every token the run may add and a round's scratch
        self.device_ids = DeviceIds(self.tokens, self.n_prompt + config.max_new_tokens + config.gamma + 2, pair.device)
        self.cache_options = self._cache_options(static_cache)
        self.target = self._shared_target(prefilled)
        if self.target is not None:
            self.prefill_s = 0.0  # `prefilled` paid it
        else:
            self.target = CachedModel(pair.target, pair.vocab_size, keep_features=self._needs_target_features(),
                                      **self.cache_options)
            self.prefill_s = self._prefill(self.target)
        self.capture_s = self.target.capture(self._target_sizes())
        self._note_graph_error("target", self.target)

    def _cache_options(self, static_cache: bool | None) -> dict:
        """Which KV cache: static (one fixed buffer; CUDA graphs on CUDA) or dynamic. None decides by
        `static_cache.plan` (static with graphs on CUDA unless SPECVIZ_CUDA_GRAPHS=0); True forces the static
        cache (eager off CUDA: the tests' parity runs), False the dynamic one. `graphs_off` says why not graphs."""
        pair = self.pair
        graphs_ok, why_not = static_plan(pair.device, [pair.target, pair.draft])
        if not self.static_ok:
            use, graphs, self.graphs_off = False, False, "several drafts share one cache"
        elif static_cache is None:
            use, graphs, self.graphs_off = graphs_ok, graphs_ok, why_not
        else:
            use, graphs = bool(static_cache), bool(static_cache) and graphs_ok
            self.graphs_off = why_not if static_cache else "the dynamic cache was asked for"
            for model in (pair.target, pair.draft) if use else ():
                if reason := unsupported_reason(model):
                    raise ValueError(f"static_cache=True cannot run this pair: {reason}")
        if not use:
            return {}
        return {"static_len": self.n_prompt + self.config.max_new_tokens + self.config.gamma + 1, "graphs": graphs}

    def _shared_target(self, prefilled: Decoder | None) -> CachedModel | None:
        """A copy of `prefilled`'s target cache (the same pair and prompt, not stepped yet, the same kind of
        cache), as `fork` copies it; None where it cannot stand for this decoder's own prefill."""
        if prefilled is None:
            return None
        same = (prefilled.pair is self.pair and prefilled.tokens == self.tokens and not prefilled.generated_ids
                and prefilled.target.seen == len(self.tokens) - 1 and prefilled.cache_options == self.cache_options
                and prefilled.target.rows == 1)
        if not same:
            return None
        target = prefilled.target.fork()
        if not self._needs_target_features():  # the draft's features stay with the draft's side
            target.keep_features, target.features = False, None
        return target

    def _target_sizes(self) -> list[int]:
        """How many new tokens the target's forwards take after the prefill (what is captured)."""
        return [1]

    def _note_graph_error(self, role: str, model: CachedModel) -> None:
        if model.static is not None and model.static.graph_error:
            self.graphs_off = "; ".join(filter(None, (self.graphs_off, f"{role}: {model.static.graph_error}")))

    @property
    def cache_kinds(self) -> dict[str, str]:
        """How each model runs, 'cuda graphs', 'static' or 'dynamic': {'draft': ..., 'target': ...} (the
        baseline, or a drafter with no model: target only). A failed capture leaves one model eager while the
        other replays graphs."""
        return {"target": cache_kind(self.target)}

    @property
    def cache_kind(self) -> str:
        """One word where every model runs alike ('cuda graphs', 'static', 'dynamic'), else each model's,
        e.g. 'draft: static, target: cuda graphs' (for reports)."""
        kinds = self.cache_kinds
        if len(set(kinds.values())) == 1:
            return next(iter(kinds.values()))
        return ", ".join(f"{role}: {kind}" for role, kind in kinds.items())

    def _needs_target_features(self) -> bool:
        return False  # only a draft that reads the target's hidden states needs them kept

    def _prefill(self, model: CachedModel) -> float:
        """The last token stays pending: its logits start the next step."""
        t0 = time.perf_counter()
        model.prefill(self.tokens[:-1])
        sync_device(self.pair.device)
        return time.perf_counter() - t0

    def held_bytes(self) -> int:
        """Bytes this decoder's KV caches hold now (`memory.held_bytes`)."""
        return held_bytes(self.target)

    def fork(self, seed: int):
        """This run from where it stands, on with another seed: the caches are copied, not recomputed
        (many seeded continuations of one prefix cost one prefill)."""
        twin = copy.copy(self)
        twin.tokens, twin.records, twin.call_s = list(self.tokens), list(self.records), list(self.call_s)
        twin.counters = Counters(**vars(self.counters))
        twin.generator = torch.Generator(device=self.pair.device).manual_seed(seed)
        twin.target = self.target.fork()
        twin.device_ids = self.device_ids.clone()
        return twin

    def state(self) -> DecoderState:
        return DecoderState(tokens=list(self.tokens), n_prompt=self.n_prompt, notice=self.notice,
                            generator=_generator_bytes(self.generator), counters=Counters(**vars(self.counters)),
                            finished=self.finished, records=list(self.records), call_s=list(self.call_s))

    @property
    def prompt_ids(self) -> list[int]:
        return self.tokens[: self.n_prompt]

    @property
    def generated_ids(self) -> list[int]:
        return self.tokens[self.n_prompt:]

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


class TargetOnlyDecoder(Decoder):
    """The baseline: one token per cached target forward, same warping and seed handling."""

    def step(self) -> EmittedToken:
        """One cached target forward from the ids on the device, one token raced there (`sampling.race`, from V
        uniforms), one read of it."""
        self._check_not_finished()
        timer = Timer(self.pair.device)
        start = timer.mark()
        ids = self.device_ids.buffer
        logits = self.target.forward(self.target.unseen(ids, 1), keep=1)[-1]                   # [V]
        uniforms = torch.rand(self.pair.vocab_size, generator=self.generator, device=self.pair.device,
                              dtype=torch.float64)                                             # [V]
        drawn = sampling.race(self.config.warp(logits), sampling.race_keys(uniforms))          # 0-d long
        self.target.write_ids(ids, drawn.reshape(1), back=0)  # where the next step's forward reads it
        end = timer.mark()
        token = drawn.tolist()  # the step's one read back to the host (a 0-d tensor: an int)
        if token == sampling.NO_TOKEN:  # NaN logits land here (every comparison with NaN is false)
            raise ValueError("cannot sample: the distribution contains NaN or infinite entries, or no mass")
        timer.add("step", start, end)
        elapsed = timer.read()["step"] / 1e3
        self.counters.target_calls += 1
        self.counters.compute_s += elapsed
        self.call_s.append(elapsed)
        kept = self._accept_new([token])
        return EmittedToken(id=token, text=self.pair.token_text(token) if kept else "", kind="target",
                            step=self.counters.target_calls)
