"""Benchmark of the lookup drafter: prompt lookup vs target-only vs transformers' own prompt lookup.

On the pair's lookup examples (`Preset.lookup_examples`: prompts whose answer copies from them, and one with
nothing to copy), at each temperature: our speculative decoder with the `PromptLookup` drafter, our `TargetOnlyDecoder` and transformers'
`generate(prompt_lookup_num_tokens=gamma)` run in one process on the same prompt ids and seeds, interleaved
prompt by prompt and seed by seed, so that drift in the machine's speed hits each alike. Ratios are
throughput ratios (tokens per second). At T > 0 transformers keeps a copied token when the token it samples
from p equals it: chance p(x), and otherwise a token from p without x, the same law as the one-hot verify.
"""
from __future__ import annotations

import time

import torch

from ..core.config import DecodeConfig
from ..core.metrics import metric_set
from ..engine.decoding.decoders import TargetOnlyDecoder
from ..engine.decoding.drafters import PromptLookup
from ..engine.decoding.factory import make_decoder
from ..engine.models.loading import load_pair
from ..engine.models.presets import NO_COPY
from .bench import _ui_step_ratio


def hf_prompt_lookup(pair, prompt_ids: list[int], config: DecodeConfig, seed: int) -> tuple[int, float]:
    """transformers' prompt lookup generation (tokens, seconds): the same gamma, n-gram size and temperature."""
    torch.manual_seed(seed)  # generate() draws from the global RNG; only this contender uses it
    ids = torch.tensor([prompt_ids], device=pair.device)
    sampling = {"do_sample": True, "temperature": config.temperature, "top_k": 0, "top_p": 1.0} \
        if config.temperature > 0 else {"do_sample": False}
    t0 = time.perf_counter()
    out = pair.target.generate(ids, attention_mask=torch.ones_like(ids), prompt_lookup_num_tokens=config.gamma,
                               max_matching_ngram_size=config.lookup_max_ngram, max_new_tokens=config.max_new_tokens,
                               pad_token_id=pair.tokenizer.eos_token_id, **sampling)
    return out.shape[1] - ids.shape[1], time.perf_counter() - t0


def _contenders(pair, prompt: str, config: DecodeConfig, seed: int) -> tuple[list, list[float], int, float]:
    """One prompt and seed: the lookup run's records, the baseline's forward times, transformers' tokens and s."""
    config = DecodeConfig(**{**config.__dict__, "seed": seed})
    spec = make_decoder(pair, prompt, config)
    spec.run()
    base = TargetOnlyDecoder(pair, prompt, config)
    base.run()
    hf_tokens, hf_s = hf_prompt_lookup(pair, spec.prompt_ids, config, seed)
    return spec.records, base.call_s, hf_tokens, hf_s


def _row(records, calls, hf_tokens: int, hf_s: float) -> dict:
    m = metric_set(records, calls)
    hf_rate = hf_tokens / hf_s
    return {"acceptance_rate": round(m["acceptance_rate"], 4),
            "tokens_per_target_pass": round(m["tokens_per_target_call"], 3),
            "rounds_without_match": sum(r.gamma == 0 for r in records),
            "tokens_per_s_lookup": round(m["tokens_per_s_speculative"], 1),
            "tokens_per_s_target_only": round(m["tokens_per_s_target_only"], 1),
            "tokens_per_s_hf_prompt_lookup": round(hf_rate, 1),
            "speedup_vs_target_only": round(m["speedup"], 3),
            "speedup_vs_hf_prompt_lookup": round(m["tokens_per_s_speculative"] / hf_rate, 3)}


def run_lookup_bench(preset=None, draft=None, target=None, device=None, gamma=4, quick=False, seed=0,
                     temperatures=(0.0, 0.7), max_ngram: int = 3) -> dict:
    new_tokens = 48 if quick else 96
    configs = [DecodeConfig(drafter=PromptLookup.kind, gamma=gamma, temperature=t, max_new_tokens=new_tokens, seed=seed,
                            lookup_max_ngram=max_ngram, record=False)
               for t in temperatures]  # validates gamma, seed and every temperature before any model loads
    if not configs:
        raise ValueError("--temperatures needs at least one temperature")
    pair = load_pair(preset, draft=draft, target=target, device=device)
    examples = dict(pair.ref.lookup_examples) or {"prompt": "The"}
    seeds = range(seed, seed + (1 if quick else 2))
    make_decoder(pair, next(iter(examples.values())), configs[0]).run()  # warm-up: one-off allocations
    hf_prompt_lookup(pair, pair.encode(next(iter(examples.values()))), DecodeConfig(gamma=gamma, max_new_tokens=8), seed)
    by_temperature = []
    for config in configs:
        per_prompt, pooled = {}, {"records": [], "calls": [], "hf_tokens": 0, "hf_s": 0.0}
        for name, prompt in examples.items():
            records, calls, hf_tokens, hf_s = [], [], 0, 0.0
            for s in seeds:
                r, c, n, dt = _contenders(pair, prompt, config, s)
                records, calls, hf_tokens, hf_s = records + r, calls + c, hf_tokens + n, hf_s + dt
            per_prompt[name] = _row(records, calls, hf_tokens, hf_s)
            if name != NO_COPY:  # the copy-heavy examples pool into the headline figures
                pooled["records"] += records
                pooled["calls"] += calls
                pooled["hf_tokens"] += hf_tokens
                pooled["hf_s"] += hf_s
        copy_heavy = _row(pooled["records"], pooled["calls"], pooled["hf_tokens"], pooled["hf_s"]) \
            if pooled["records"] else None
        first = next(name for name in examples if name != NO_COPY) if len(examples) > 1 else next(iter(examples))
        live = _ui_step_ratio(pair, examples[first], {k: v for k, v in config.__dict__.items() if k not in ("seed", "record")}, seed)
        by_temperature.append({"temperature": config.temperature, "copy_heavy": copy_heavy, "by_prompt": per_prompt,
                               "live_prompt": first, "live_steps": live["live_steps"],
                               "live_speedup": live["live_speedup"]})
    return {"preset": pair.name, "device": str(pair.device), "threads": torch.get_num_threads(), "drafter": PromptLookup.kind,
            "gamma": gamma, "lookup_max_ngram": max_ngram, "lookup_min_ngram": configs[0].lookup_min_ngram,
            "lookup_source": configs[0].lookup_source, "new_tokens_per_run": new_tokens, "seeds": len(seeds),
            "prompts": examples, "copy_heavy_prompts": [n for n in examples if n != NO_COPY],
            "by_temperature": by_temperature}
