"""A race: the same prompt and seed decoded by target-only and by speculative decoding, one side at a time.

Each side decodes to the end (EOS or max_new_tokens) alone, the other waiting, and the time at which each
token became available is recorded: for target-only after each forward, for speculative decoding after
each round (its tokens arrive together). The page replays both lanes on one clock, so a busy browser slows
both lanes alike and cannot favour either. Which side goes first alternates between a visitor's races (the
first forwards after a pause are the slowest). Both clocks start after the prompt's prefill, as the live
counters do; every forward and every sampling step after it is inside the times.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, replace

from ...core.trace import StepRecord
from ..decoding.decoders import TargetOnlyDecoder
from ..decoding.factory import make_decoder
from ..models.loading import ModelPair
from ..settings import current as current_deployment
from . import limits, zerogpu
from .quiet import before_timed_forwards
from .run import TIMED, RunSettings

TARGET_ONLY, SPECULATIVE = "target_only", "speculative"


@dataclass(frozen=True)
class Lane:
    """One side of a race: its tokens, what each was (as on the step card) and when it arrived."""
    side: str                  # TARGET_ONLY | SPECULATIVE
    texts: tuple[str, ...]     # each generated token's text
    kinds: tuple[str, ...]     # "target" | "accepted" | "resampled" | "bonus"
    times_s: tuple[float, ...]  # seconds after the side's first forward began when the token was ready
    target_passes: int
    draft_passes: int

    @property
    def total_s(self) -> float:
        return self.times_s[-1] if self.times_s else 0.0


@dataclass(frozen=True)
class Race:
    target_only: Lane
    speculative: Lane
    first: str                 # the side that ran first
    device: str

    @property
    def speedup(self) -> float:
        """Wall time target-only over wall time speculative, per token (the lanes may end at other lengths)."""
        a, b = self.target_only, self.speculative
        if not (a.total_s and b.total_s and a.texts and b.texts):
            return 0.0
        return (len(b.texts) / b.total_s) / (len(a.texts) / a.total_s)


def round_kinds(record: StepRecord) -> list[str]:
    """What each token a round emitted was: the accepted drafts, then the resampled or bonus token
    (cut to what the round kept at EOS or max_new_tokens)."""
    last = "bonus" if record.n_accepted == record.gamma else "resampled"
    return (["accepted"] * record.n_accepted + [last])[: record.n_emitted]


def _target_only_lane(pair: ModelPair, prompt: str, config) -> Lane:
    decoder = TargetOnlyDecoder(pair, prompt, config)  # the prefill is done here, before the clock starts
    kinds, times = [], []
    start = time.perf_counter()
    while not decoder.finished:
        limits.check()  # past the event's deadline: stop between forwards (EventTimeout names the setting)
        decoder.step()
        times.append(time.perf_counter() - start)
        kinds.append("target")
    texts = [pair.token_text(x) for x in decoder.generated_ids]
    return Lane(TARGET_ONLY, tuple(texts), tuple(kinds[: len(texts)]), tuple(times[: len(texts)]),
                decoder.counters.target_calls, 0)


def _speculative_lane(pair: ModelPair, prompt: str, config) -> Lane:
    decoder = make_decoder(pair, prompt, config)
    kinds, times = [], []
    start = time.perf_counter()
    while not decoder.finished:
        limits.check()
        decoder.step()
        ready = time.perf_counter() - start
        new = round_kinds(decoder.records[-1])
        kinds += new
        times += [ready] * len(new)
    texts = [pair.token_text(x) for x in decoder.generated_ids]
    return Lane(SPECULATIVE, tuple(texts), tuple(kinds), tuple(times), decoder.counters.target_calls,
                decoder.counters.draft_calls)  # draft forwards (a drafter with no model, prompt lookup, runs none)


RACE_GPU_SECONDS = 60  # what one race asks ZeroGPU for: both sides to the end (at most 200 tokens each on the page)


@zerogpu.on_gpu(duration=RACE_GPU_SECONDS)
def run_race(settings: RunSettings, speculative_first: bool) -> Race:
    """Both sides to the end, one after the other, in the order asked, from plain data to plain data (on
    ZeroGPU it runs in the GPU worker, decorated at import as `spaces` requires). No step card is built inside the timed loop (`record` off)."""
    pair = settings.load()
    config = replace(settings.config, record=False)
    order = [SPECULATIVE, TARGET_ONLY] if speculative_first else [TARGET_ONLY, SPECULATIVE]
    # a whole decode each way is heavy work: it takes a heavy slot, so a light Step still finds a worker
    with limits.heavy_slot(limits.HEAVY_TOKENS, current_deployment().concurrency):
        lanes = _both(pair, settings.prompt, config, order)
    return Race(target_only=lanes[TARGET_ONLY], speculative=lanes[SPECULATIVE], first=order[0],
                device=str(pair.device))


def _both(pair: ModelPair, prompt: str, config, order: list[str]) -> dict:
    decode = {TARGET_ONLY: _target_only_lane, SPECULATIVE: _speculative_lane}
    lanes = {}
    for side in order:
        with TIMED:  # alone: no other race or Step of this process runs its forwards meanwhile
            before_timed_forwards(pair.device)
            lanes[side] = decode[side](pair, prompt, config)
    return lanes
