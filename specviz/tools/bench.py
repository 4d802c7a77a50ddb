"""Benchmark: our speculative decoder vs our target-only decoder vs transformers' assisted generation.

All three run in one process on the same pair, prompts and seeds, interleaved prompt by prompt
so that drift in the machine's speed hits each contender alike. Every contender samples plain
T = 1 (no top-k / top-p). Ratios are throughput ratios (tokens per second) from this one run.
"""
from __future__ import annotations

import copy
import gc
import statistics
import time
from dataclasses import dataclass

import torch

from ..core.config import DecodeConfig
from ..core.metrics import metric_set
from ..engine.caches.cache import CachedModel
from ..engine.decoding.decoders import SpeculativeDecoder, TargetOnlyDecoder
from ..engine.decoding.factory import make_decoder
from ..engine.decoding.feature_draft import cached_draft, reads_features
from ..engine.models.cpu_linear import RowsFirstLinear, use_rows_first_linears
from ..engine.models.draft_precision import restore_draft
from ..engine.models.loading import load_pair
from ..engine.models.target_precision import ROWWISE, Bf16RowsLinear


def _timed(fn):
    t0 = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t0


def _synced(out: torch.Tensor) -> torch.Tensor:
    """`out` once the device has computed it (a CUDA forward returns before its kernels finish)."""
    if out.device.type == "cuda":
        torch.cuda.synchronize(out.device)
    return out


class CallTimer:
    """Wall time of one cached forward for each (model, new tokens) in `calls`, after `context`, each measured
    in isolation, in blocks: `block(size)` runs `size` consecutive calls of each model in turn (as in decoding,
    where a model runs several times in a row with its weights in cache; two untimed warm-up calls first), so
    that a caller can spread the blocks over a run and drift in the machine's speed hits the calls and the run
    alike. A model may come as an empty CachedModel (a draft reading a target's features, or one with a static
    cache, whose graphs are captured after the context)."""

    def __init__(self, calls: list[tuple[object, int]], vocab: int, context: list[int]):
        self.calls, self.context, self.done = calls, context, 0
        self.cached = [model if isinstance(model, CachedModel) else CachedModel(model, vocab) for model, _ in calls]
        for c, (_, n_new) in zip(self.cached, calls):
            c.forward(context)
            c.capture([n_new])
        self.times: list[list[float]] = [[] for _ in calls]

    def block(self, size: int) -> None:
        context = self.context
        for j, ((_, n_new), c) in enumerate(zip(self.calls, self.cached)):
            for i in range(-2, size):  # two warm-up calls per block
                new = [context[(self.done + i + k) % len(context)] for k in range(n_new)]
                _, dt = _timed(lambda c=c, new=new: _synced(c.forward(new)))
                c.crop_to(len(context))
                if i >= 0:
                    self.times[j].append(dt)
        self.done += size

    def medians_ms(self) -> list[float]:
        return [statistics.median(t) * 1e3 for t in self.times]


TIMING_BLOCK = 25  # consecutive calls of one model per timed block


def per_call_latency_ms(calls: list[tuple[object, int]], vocab: int, context: list[int], repeats: int,
                        block: int = TIMING_BLOCK) -> list[float]:
    """Median wall time in ms of one cached forward for each (model, new tokens) in `calls`: `repeats` calls
    each, in blocks of `block` (CallTimer), the blocks of the different calls alternating."""
    timer = CallTimer(calls, vocab, context)
    for start in range(0, repeats, block):
        timer.block(min(block, repeats - start))
    return timer.medians_ms()


class RoundTimer:
    """Wall time of a round made of nothing but its forwards: gamma 1-token draft calls, then the target's
    forward over gamma + 1 tokens, both caches cropped back; no warping, sampling or verification. The cost
    model adds the same forwards timed one model at a time in blocks (CallTimer); here they alternate as in
    decoding, so what separates the two is what alternating costs the forwards themselves, which no change to
    the loop outside them can remove. A draft reading features reads `target`'s. `rounds(n)` runs n rounds
    (after two untimed ones), so that a caller can spread them over a run."""

    def __init__(self, draft: CachedModel, target: CachedModel, context: list[int], gamma: int):
        self.draft, self.target, self.context, self.gamma, self.done = draft, target, context, gamma, 0
        target.forward(context)
        draft.forward(context)
        for model, n_new in ((draft, 1), (target, gamma + 1)):
            model.capture([n_new])
        self.times: list[float] = []

    def rounds(self, n: int) -> None:
        draft, target, context, gamma = self.draft, self.target, self.context, self.gamma
        for r in range(-2, n):  # two warm-up rounds
            new = [context[(self.done + r + k) % len(context)] for k in range(gamma + 1)]
            t0 = time.perf_counter()
            for k in range(gamma):
                draft.forward(new[k:k + 1], keep=1)
            _synced(target.forward(new, keep=gamma + 1))
            dt = time.perf_counter() - t0
            draft.crop_to(len(context))
            target.crop_to(len(context))
            if r >= 0:
                self.times.append(dt)
        self.done += n

    def median_ms(self) -> float:
        return statistics.median(self.times) * 1e3


def forward_only_round_ms(draft: CachedModel, target: CachedModel, context: list[int], gamma: int,
                          rounds: int) -> float:
    """Median wall time in ms of `rounds` forward-only rounds in a row (RoundTimer)."""
    timer = RoundTimer(draft, target, context, gamma)
    timer.rounds(rounds)
    return timer.median_ms()


def engine_twins(pair) -> tuple[object | None, object | None]:
    """Copies of the pair's models as they would run without the engine's CPU choices, for timing only:
    the target with plain nn.Linear layers in the pair's dtype and sdpa attention where it has rows-first or
    bfloat16 ones (engine/models/cpu_linear.py, target_precision.py), and the draft in the pair's dtype where it
    computes in bfloat16 (engine/models/draft_precision.py); None where nothing changed."""
    plain_target = None
    if any(isinstance(m, (RowsFirstLinear, Bf16RowsLinear)) for m in pair.target.modules()):
        plain_target = copy.deepcopy(pair.target)
        for module in list(plain_target.modules()):
            for name, child in list(module.named_children()):
                if isinstance(child, RowsFirstLinear):
                    setattr(module, name, child.as_linear())
                elif isinstance(child, Bf16RowsLinear):
                    setattr(module, name, child.as_linear(pair.dtype))
        if plain_target.config._attn_implementation == ROWWISE:
            plain_target.set_attn_implementation("sdpa")
    wide_draft = None
    if pair.draft_dtype != pair.dtype:  # the draft as SPECVIZ_DRAFT_BF16=0 would load it
        wide_draft = copy.deepcopy(pair.draft)
        restore_draft(wide_draft, pair.dtype)
        use_rows_first_linears(wide_draft, pair.device)
    return plain_target, wide_draft


def hf_assisted(pair, prompt_ids: list[int], gamma: int, new_tokens: int, seed: int) -> int:
    """transformers' assisted generation with the same pair: sampling at T = 1, fixed gamma."""
    torch.manual_seed(seed)  # generate() draws from the global RNG; only this contender uses it
    ids = torch.tensor([prompt_ids], device=pair.device)
    out = pair.target.generate(ids, attention_mask=torch.ones_like(ids), assistant_model=pair.draft,
                               do_sample=True, temperature=1.0, top_k=0, top_p=1.0,
                               max_new_tokens=new_tokens, min_new_tokens=new_tokens,
                               num_assistant_tokens=gamma, num_assistant_tokens_schedule="constant",
                               assistant_confidence_threshold=0.0, pad_token_id=pair.tokenizer.eos_token_id)
    return out.shape[1] - ids.shape[1]


def run_bench(preset=None, draft=None, target=None, device=None, gamma=4, quick=False, seed=0) -> dict:
    # 1. the pair, its prompts and seeds
    new_tokens = 48 if quick else 96
    config = dict(gamma=gamma, temperature=1.0, max_new_tokens=new_tokens)
    DecodeConfig(**config, seed=seed)  # validates gamma and seed before any model loads
    pair = load_pair(preset, draft=draft, target=target, device=device)
    prompts = list(pair.examples or ("The",))[: 2 if quick else 4]
    seeds = range(seed, seed + (2 if quick else 4))
    # 2. warm-up: first calls pay one-off allocation costs
    warm = make_decoder(pair, prompts[0], DecodeConfig(**config, seed=seed, record=False))
    warm.run()
    # transformers' assisted generation cannot feed a draft the target's hidden states: no contender then
    with_hf = not reads_features(pair.draft)
    if with_hf:
        hf_assisted(pair, pair.encode(prompts[0]), gamma, 8, seed)
    # 3. the timers of the cost model's calls and of the forward-only round
    timers = bench_timers(pair, warm, pair.encode(prompts[0]) * 4, gamma)
    # 4. the runs, each contender in turn on every prompt and seed, timed blocks after each
    per_run = -(-(50 if quick else 300) // (len(prompts) * len(seeds)))  # blocks after each run: ~50 or ~300 in all
    records, calls, hf_tokens, hf_s = [], [], 0, 0.0
    for prompt in prompts:
        for s in seeds:
            spec = make_decoder(pair, prompt, DecodeConfig(**config, seed=s, record=False))
            base = TargetOnlyDecoder(pair, prompt, DecodeConfig(**config, seed=s), prefilled=spec)  # one prefill
            spec.run()
            records += spec.records
            base.run()
            calls += base.call_s
            if with_hf:
                n, dt = _timed(lambda spec=spec, s=s: hf_assisted(pair, spec.prompt_ids, gamma, new_tokens, s))
                hf_tokens, hf_s = hf_tokens + n, hf_s + dt
            timers.after_run(per_run)
    # 5. the figures; the timers' copies of the models (a hub target's take gigabytes) go first
    m = metric_set(records, calls)  # the same metric set the app and the CLI show
    medians = timers.medians_ms()
    del timers
    gc.collect()
    result = bench_figures(pair, warm, m, medians, gamma=gamma, new_tokens=new_tokens,
                           runs=len(prompts) * len(seeds), hf_rate=hf_tokens / hf_s if with_hf else None)
    result.update(_ui_step_ratio(pair, prompts[0], config, seed))
    live = result["live_speedup"]
    result["live_over_bench"] = None if live is None else round(live / result["speedup_vs_target_only"], 3)
    return result


@dataclass
class BenchTimers:
    """The cost model's per-call times and the forward-only round, measured in short blocks after every run,
    so that drift in the machine's speed (tens of percent between minutes on a shared VM) hits the cost model
    and the decoding it predicts alike. Holds the engine's twins (engine_twins) while they are timed."""
    calls: CallTimer
    round: RoundTimer
    plain_target: object | None
    wide_draft: object | None

    def after_run(self, per_run: int) -> None:
        for start in range(0, per_run, TIMING_BLOCK):  # blocks of at most 25 calls, as per_call_latency_ms's
            self.calls.block(min(TIMING_BLOCK, per_run - start))
        self.round.rounds(per_run)

    def medians_ms(self) -> dict:
        draft_ms, target_ms, verify_ms, *twin_ms = self.calls.medians_ms()
        return dict(draft=draft_ms, target=target_ms, verify=verify_ms, round=self.round.median_ms(),
                    plain=twin_ms[:2] if self.plain_target is not None else [None, None],
                    wide=twin_ms[-1] if self.wide_draft is not None else None)


def bench_timers(pair, warm: SpeculativeDecoder, context: list[int], gamma: int) -> BenchTimers:
    """The timers of the draft's and the target's calls (and of the engine's twins) and of the round."""
    features = reads_features(pair.draft)  # then the target keeps its hidden states, as in decoding
    source = CachedModel(pair.target, pair.vocab_size, keep_features=True)  # what a feature-reading draft reads
    if features:
        source.forward(context)
    # the same kind of cache as the decoders ran on (a static one, replayed as CUDA graphs, on CUDA)
    options = {"static_len": len(context) + gamma + 2, "graphs": warm.target.static.graphs} if warm.target.static else {}
    timed = [(cached_draft(pair.draft, pair.vocab_size, source, **options), 1),
             (CachedModel(pair.target, pair.vocab_size, keep_features=features, **options), 1),
             (CachedModel(pair.target, pair.vocab_size, keep_features=features, **options), gamma + 1)]
    # the same calls without the engine's CPU choices, in the same interleaved blocks (docs/benchmarks.md); the
    # copies are held through the run (on the CPU only, where the engine made such choices)
    plain_target, wide_draft = engine_twins(pair)
    if plain_target is not None:
        timed += [(CachedModel(plain_target, pair.vocab_size, keep_features=features), n) for n in (1, gamma + 1)]
    if wide_draft is not None:
        timed.append((cached_draft(wide_draft, pair.vocab_size, source), 1))
    calls_timer = CallTimer(timed, pair.vocab_size, context)
    round_target = CachedModel(pair.target, pair.vocab_size, keep_features=features, **options)
    round_timer = RoundTimer(cached_draft(pair.draft, pair.vocab_size, round_target, **options), round_target,
                             context, gamma)
    return BenchTimers(calls_timer, round_timer, plain_target, wide_draft)


def bench_figures(pair, warm: SpeculativeDecoder, m: dict, ms: dict, gamma: int, new_tokens: int, runs: int,
                  hf_rate: float | None) -> dict:
    """The benchmark's result: the run's metric set `m`, the timers' medians `ms`, the contenders' rates."""
    with_hf = hf_rate is not None
    result = {
        "preset": pair.name, "device": str(pair.device), "dtype": str(pair.dtype).removeprefix("torch."),
        "draft_dtype": str(pair.draft_dtype).removeprefix("torch."),
        "target_weights": str(pair.target_weights or pair.dtype).removeprefix("torch."),
        "gamma": gamma, "new_tokens_per_run": new_tokens,
        "runs": runs, "threads": torch.get_num_threads(),
        "tokens_per_s_speculative": round(m["tokens_per_s_speculative"], 1),
        "tokens_per_s_target_only": round(m["tokens_per_s_target_only"], 1),
        "tokens_per_s_hf_assisted": round(hf_rate, 1) if with_hf else None,
        "speedup_vs_target_only": round(m["speedup"], 3),
        "speedup_vs_hf_assisted": round(m["tokens_per_s_speculative"] / hf_rate, 3) if with_hf else None,
        "draft_reads_target_features": reads_features(pair.draft),
        "cache": warm.cache_kind, "cache_by_model": warm.cache_kinds, "graphs_off": warm.graphs_off or None,
        "regions_off": getattr(warm, "regions_off", None) or None,
        "capture_s": round(warm.capture_s, 3),
        "acceptance_rate": round(m["acceptance_rate"], 4), "draft_acceptance_rate": round(m["draft_acceptance_rate"], 4),
        "tokens_per_target_call": round(m["tokens_per_target_call"], 3),
        "system_efficiency": round(m["system_efficiency"], 3),
        "draft_ms": round(ms["draft"], 3), "target_ms": round(ms["target"], 3), "target_verify_ms": round(ms["verify"], 3),
        "cost_ratio_c": round(m["cost_ratio_c"], 3),
        "cost_ratio_c_isolated": round(ms["draft"] / ms["target"], 3),
        "predicted_speedup_thm38": round(m["predicted_speedup_thm38"], 3), "best_gamma": m["best_gamma"],
        "predicted_speedup_cost_model": round(m["tokens_per_target_call"] * ms["target"] / (gamma * ms["draft"] + ms["verify"]), 3),
        # what the engine's CPU choices saved, timed beside the figures above: null where it made none
        "target_ms_plain_layers": _rounded(ms["plain"][0]), "target_verify_ms_plain_layers": _rounded(ms["plain"][1]),
        "draft_ms_in_pair_dtype": _rounded(ms["wide"]),
    }
    result["measured_over_cost_model"] = round(result["speedup_vs_target_only"] / result["predicted_speedup_cost_model"], 3)
    # the round in three measures: the cost model's sum of isolated calls, the same forwards alternating as
    # in decoding with nothing between them, and the real round (all its work; mean over the run's rounds)
    cost_model_round_ms = gamma * ms["draft"] + ms["verify"]
    result.update({
        "round_ms_cost_model": round(cost_model_round_ms, 3), "round_ms_forwards_only": round(ms["round"], 3),
        "round_ms_measured": round(1e3 * m["wall_s"] / m["steps"], 3),
        "cost_model_ceiling_forwards_only": round(cost_model_round_ms / ms["round"], 3),
    })
    return result


def _rounded(ms: float | None) -> float | None:
    return None if ms is None else round(ms, 3)


LIVE_STEPS = 20  # the page's counters are compared with the bench after this many Steps


def _ui_step_ratio(pair, prompt, config, seed, steps: int = LIVE_STEPS) -> dict:
    """What the app adds to a Step, and what its live counters say after `steps` Steps. A Step is the run
    layer's step (the speculative round plus the baseline's catch-up, in the fair order); the app follows it
    with the views it shows (figures, narration, counters, the step card and the plots' JSON, which gradio
    sends). Medians over the steps; `live_speedup` is the counters' speedup after them (ComparedRun.metrics(),
    what the page shows), from a run long enough for `steps` rounds unless EOS ends it first."""
    from ..engine.serving.run import ComparedRun, RunSettings
    from ..present.views import Session, build_view

    room = steps * (config["gamma"] + 1)  # every round emits at most gamma + 1 tokens
    fits = pair.context_window - config["gamma"] - 1 - len(pair.encode(prompt))  # the whole prompt stays in the window
    config = {**config, "max_new_tokens": max(config["max_new_tokens"], min(room, fits))}
    session = Session()
    session.run = ComparedRun(RunSettings(pair=pair.ref, prompt=prompt, config=DecodeConfig(**config, seed=seed),
                                           device=str(pair.device)),
                              stateless=False)
    ui_s, engine_s = [], []
    for _ in range(steps):
        if session.run.finished:
            break
        t0 = time.perf_counter()
        session.run.step()
        t1 = time.perf_counter()
        view = build_view(session, "leviathan")
        for figure in (view.pq, view.uniform, view.residual, view.history):
            figure.to_json()
        ui_s.append(time.perf_counter() - t0)
        engine_s.append(t1 - t0)
    ui, engine = statistics.median(ui_s), statistics.median(engine_s)
    live = session.run.metrics()["speedup"]
    return {"ui_step_ms": round(ui * 1e3, 2), "engine_step_ms": round(engine * 1e3, 2),
            "ui_over_engine_step": round(ui / engine, 3), "live_steps": len(ui_s),
            "live_speedup": None if live is None else round(live, 3)}


def run_drafts_bench(preset=None, draft=None, target=None, device=None, drafts=(1, 2, 4), gammas=(2, 4),
                     quick=False, seed=0) -> dict:
    """Several drafts at once: tokens per target pass and speedup against target-only for each k and gamma.

    Every (gamma, k) and the target-only baseline run on the same prompts and seeds, interleaved prompt
    by prompt and seed by seed (so drift in the machine's speed hits them alike); plain T = 1."""
    configs = [DecodeConfig(gamma=g, drafts=k, temperature=1.0, max_new_tokens=48 if quick else 96, record=False)
               for g in gammas for k in drafts]  # validates every k and gamma before any model loads
    pair = load_pair(preset, draft=draft, target=target, device=device)
    prompts = list(pair.examples or ("The",))[: 2 if quick else 3]
    seeds = range(seed, seed + (2 if quick else 3))
    records = {(c.gamma, c.drafts): [] for c in configs}
    calls = []
    make_decoder(pair, prompts[0], configs[-1]).run()  # warm-up
    for prompt in prompts:
        for s in seeds:
            base = TargetOnlyDecoder(pair, prompt, DecodeConfig(**{**configs[0].__dict__, "seed": s}))
            base.run()
            calls += base.call_s
            for c in configs:
                spec = make_decoder(pair, prompt, DecodeConfig(**{**c.__dict__, "seed": s}))
                spec.run()
                records[(c.gamma, c.drafts)] += spec.records
    rows = []
    for (gamma, k), recs in records.items():
        m = metric_set(recs, calls)
        rows.append({"gamma": gamma, "drafts": k, "tokens_per_target_pass": round(m["tokens_per_target_call"], 3),
                     "speedup_vs_target_only": round(m["speedup"], 3),
                     "tokens_per_s": round(m["tokens_per_s_speculative"], 1),
                     "draft_ms_per_step": round(1e3 * sum(r.draft_s for r in recs) / len(recs), 2),
                     "target_ms_per_pass": round(1e3 * sum(r.target_s for r in recs) / len(recs), 2),
                     "acceptance_by_depth": [round(x, 3) for x in m["acceptance_by_depth"]],
                     "acceptance_by_rank": [round(x, 3) for x in m["acceptance_by_rank"]]})
    return {"preset": pair.name, "device": str(pair.device), "threads": torch.get_num_threads(),
            "runs_per_config": len(prompts) * len(seeds), "new_tokens_per_run": configs[0].max_new_tokens,
            "tokens_per_s_target_only": round(len(calls) / sum(calls), 1), "rows": rows}
