"""`specviz bench --preset NAME --random-weights`: what a preset costs per forward, without its weights.

Builds the preset's draft and target from their configs (engine/models/shapes.py) with random weights,
measures in isolation the cached forward of the draft (1 token), of the target (1 token) and of the
target's verify pass (gamma + 1 tokens) for each gamma, and gives c = draft / target, the weights'
memory, and the speedup the cost model predicts for typical acceptance rates. On CUDA it measures each
twice, eager on the dynamic cache and replayed as CUDA graphs on the static one (engine/caches/static_cache.py),
as the decoders run them:
    speedup(alpha, gamma) = E[tokens per round](alpha, gamma) * target_ms / (gamma * draft_ms + verify_ms(gamma))
beside Thm 3.8's (1 - alpha^(gamma+1)) / ((1 - alpha)(gamma c + 1)), which assumes verify_ms = target_ms.
TYPICAL_ALPHAS are the range Leviathan et al. (2023, Table 3) measured for real draft/target pairs
(0.52 to 0.88 over their T5, GPT-like and LaMDA pairs; most between 0.6 and 0.8).
"""
from __future__ import annotations

import torch

from ..core import theory
from ..engine.caches.cache import CachedModel
from ..engine.caches.static_cache import plan as static_plan
from ..engine.models.placement import fit_to_device, pick_device, pick_dtype
from ..engine.models.presets import ModelLoadError
from ..engine.models.shapes import ARCHITECTURES, random_model
from .bench import per_call_latency_ms

TYPICAL_ALPHAS = (0.6, 0.7, 0.8)
GAMMAS = (1, 2, 4, 8)
CONTEXT_TOKENS = 128


def measure_shapes(draft_shape: dict, target_shape: dict, *, device=None, dtype=None, gammas=GAMMAS,
                   repeats: int = 30, context_tokens: int = CONTEXT_TOKENS) -> dict:
    dev = pick_device(device)
    dt = pick_dtype(dev, dtype)
    draft, target = random_model(draft_shape, dt, dev, seed=0), random_model(target_shape, dt, dev, seed=1)
    draft_dt, target_weights = fit_to_device(draft, target, dev, dt)  # as load_pair runs them (bf16 on a bf16 CPU, ...)
    vocab = min(draft.config.get_text_config().vocab_size, target.config.get_text_config().vocab_size)
    context = torch.randint(0, vocab, (context_tokens,), generator=torch.Generator().manual_seed(0)).tolist()
    calls = [(draft, 1), (target, 1)] + [(target, g + 1) for g in gammas]
    if dev.type == "cuda":
        torch.cuda.reset_peak_memory_stats(dev)
    weights = {role: sum(p.numel() * p.element_size() for p in m.parameters()) for role, m in
               (("draft", draft), ("target", target))}
    graphs, why_not = static_plan(dev, [draft, target])
    kinds = {"eager": {}}
    if graphs:  # the same calls on static caches, replayed as CUDA graphs
        kinds["graphs"] = {"static_len": context_tokens + max(gammas) + 2, "graphs": True}
    cached = {kind: [(CachedModel(model, vocab, **options), n) for model, n in calls] for kind, options in kinds.items()}
    # one measurement for both kinds: their blocks alternate, so drift in the machine's speed hits them alike
    times = per_call_latency_ms([c for kind in cached.values() for c in kind], vocab, context, repeats,
                                block=min(repeats, 10))
    result = {"device": str(dev), "dtype": str(dt).removeprefix("torch."),
              "draft_dtype": str(draft_dt).removeprefix("torch."),
              "target_weights": str(target_weights).removeprefix("torch."), "context_tokens": context_tokens,
              **_costs(times[: len(calls)], cached["eager"], gammas),
              "weights_mib": {k: round(v / 2**20, 1) for k, v in weights.items()},
              "graphs": _costs(times[len(calls):], cached["graphs"], gammas) if graphs else None}
    if not graphs:
        result["graphs_off"] = why_not
    result["peak_gpu_mib"] = round(torch.cuda.max_memory_allocated(dev) / 2**20, 1) if dev.type == "cuda" else None
    return result


def _costs(times: list[float], cached, gammas) -> dict:
    """From per-forward ms (draft, target, then a verify per gamma): c and the predicted speedups."""
    draft_ms, target_ms, verify = times[0], times[1], dict(zip(gammas, times[2:]))
    c = draft_ms / target_ms
    predictions = {}
    for alpha in TYPICAL_ALPHAS:
        predictions[str(alpha)] = {str(g): {
            "cost_model": round(theory.expected_tokens_per_target_call(alpha, g) * target_ms
                                / (g * draft_ms + verify[g]), 3),
            "thm38": round(theory.expected_speedup(alpha, g, c), 3)} for g in gammas}
    failed = [m.static.graph_error for m, _ in cached if m.static is not None and m.static.graph_error]
    return {"draft_ms": round(draft_ms, 3), "target_ms": round(target_ms, 3),
            "verify_ms": {str(g): round(v, 3) for g, v in verify.items()},
            "cost_ratio_c": round(c, 3), "predicted_speedup": predictions,
            **({"graph_error": failed[0]} if failed else {})}


def run_preset_cost(preset: str, *, device=None, dtype=None, repeats: int = 30) -> dict:
    if preset not in ARCHITECTURES:
        raise ModelLoadError(f"--random-weights needs a hub preset with known shapes: one of {sorted(ARCHITECTURES)}")
    draft_shape, target_shape = ARCHITECTURES[preset]
    return {"preset": preset, "random_weights": True,
            **measure_shapes(draft_shape, target_shape, device=device, dtype=dtype, repeats=repeats)}
