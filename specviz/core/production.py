"""A production server's speculative-decoding counters (Prometheus text exposition) turned into the
same figures the report gives for a measured pair.

vLLM (v1 engine; vllm/v1/spec_decode/metrics.py, `SpecDecodingProm`, labels model_name and engine,
plus position on the per-position counter) exposes four counters, rendered with prometheus_client's
`_total` suffix:
  vllm:spec_decode_num_drafts_total                  drafts (speculative steps)
  vllm:spec_decode_num_draft_tokens_total            drafted tokens
  vllm:spec_decode_num_accepted_tokens_total         accepted drafted tokens
  vllm:spec_decode_num_accepted_tokens_per_pos_total{position="i"}  drafts whose position i was accepted
llama.cpp's server (tools/server, `--metrics`; ggml-org/llama.cpp PR #26389, "matching the vLLM counter
schema") exposes the same four counters under the prefix llamacpp: (llamacpp:spec_decode_num_drafts,
..._num_draft_tokens, ..._num_accepted_tokens, ..._num_accepted_tokens_per_pos{position="N"}), read
with the same code and the same definitions.
SGLang (python/sglang/srt/metrics/collector.py; docs/references/production_metrics.md) exposes gauges
averaged by the server: sglang:spec_accept_length (accepted drafts + the bonus token per verify
forward) and sglang:spec_accept_rate.

Every label set (engines, models, ranks) is summed for counters and averaged for gauges. With two
scrapes the counters are differenced (the rates between them); a counter that went down is an error
(the server restarted). Pure functions: the text in, plain dicts out.
"""
from __future__ import annotations

import math
import re

from . import theory
from .config import GAMMA_MAX

COUNTERS = {"drafts": "num_drafts", "draft_tokens": "num_draft_tokens", "accepted": "num_accepted_tokens",
            "per_pos": "num_accepted_tokens_per_pos"}
PREFIXES = {"vllm": "vllm:spec_decode_", "llama.cpp": "llamacpp:spec_decode_"}  # the same schema, two servers
SGLANG = {"accept_length": "sglang:spec_accept_length", "accept_rate": "sglang:spec_accept_rate"}

_SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})?\s+(\S+)(\s+\S+)?\s*$')
_LABEL = re.compile(r'\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*=\s*"((?:[^"\\]|\\.)*)"\s*,?')


def _unescape(value: str) -> str:
    return value.replace("\\n", "\n").replace('\\"', '"').replace("\\\\", "\\")


def parse_exposition(text: str) -> list[tuple[str, dict, float]]:
    """(name, labels, value) for every sample line; comments and blank lines skipped. A malformed
    sample line is a ValueError naming its line number."""
    out = []
    for number, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        match = _SAMPLE.match(line)
        if not match:
            raise ValueError(f"line {number} is not a Prometheus sample: {line[:80]!r}")
        name, _, label_text, value = match.group(1), match.group(2), match.group(3), match.group(4)
        labels = {k: _unescape(v) for k, v in _LABEL.findall(label_text or "")}
        try:
            number_value = float(value)
        except ValueError:
            raise ValueError(f"line {number}: {value!r} is not a number") from None
        out.append((name, labels, number_value))
    return out


def _series(samples, base: str) -> dict[tuple, float]:
    """The counter `base` (with or without prometheus_client's _total suffix), keyed by its label set."""
    return {tuple(sorted(labels.items())): value for name, labels, value in samples
            if name in (base, base + "_total")}


def _counters(samples, engine: str = "vllm") -> dict[str, dict[tuple, float]]:
    return {key: _series(samples, PREFIXES[engine] + name) for key, name in COUNTERS.items()}


def _engine_of(samples) -> str:
    """The server whose counters the scrape holds (vLLM's when neither's are there)."""
    for engine in PREFIXES:
        if any(_counters(samples, engine)[k] for k in ("drafts", "draft_tokens", "accepted")):
            return engine
    return "vllm"


def _difference(first: dict, second: dict, engine: str = "vllm") -> dict:
    """second - first per series; a series that went down (or vanished) is a restart: ValueError."""
    out = {}
    for key, series in second.items():
        for labels, value in series.items():
            before = first[key].get(labels, 0.0)
            if value < before:
                shown = ",".join(f'{k}="{v}"' for k, v in labels)
                raise ValueError(f"the counter {PREFIXES[engine] + COUNTERS[key]}_total{{{shown}}} went backwards between the scrapes "
                                 f"({before:g} -> {value:g}): the server restarted; scrape twice again")
        for labels in first[key]:
            if labels not in series:
                raise ValueError(f"the counter {PREFIXES[engine] + COUNTERS[key]}_total{dict(labels)} is in the first scrape but not the "
                                 "second: the server restarted or another server answered")
        out[key] = {labels: value - first[key].get(labels, 0.0) for labels, value in series.items()}
    return out


def alpha_from_length(mean_accepted: float, gamma: int) -> float:
    """The i.i.d. acceptance rate alpha with sum_{k=1..gamma} alpha^k = mean accepted drafts per step."""
    target = min(max(mean_accepted, 0.0), float(gamma))
    low, high = 0.0, 1.0
    for _ in range(60):
        mid = (low + high) / 2
        if sum(mid ** k for k in range(1, gamma + 1)) < target:
            low = mid
        else:
            high = mid
    return (low + high) / 2


def _vllm_figures(counters: dict, cost_ratio: float | None, engine: str = "vllm") -> dict:
    totals = {key: sum(series.values()) for key, series in counters.items() if key != "per_pos"}
    per_pos: dict[int, float] = {}
    for labels, value in counters["per_pos"].items():
        position = dict(labels).get("position")
        if position is not None and position.isdigit():
            per_pos[int(position)] = per_pos.get(int(position), 0.0) + value
    drafts, draft_tokens, accepted = totals["drafts"], totals["draft_tokens"], totals["accepted"]
    if drafts <= 0:
        raise ValueError(f"no speculative drafts in the interval ({PREFIXES[engine]}num_drafts did not grow): "
                         "send traffic between the scrapes")
    positions = [per_pos.get(i, 0.0) for i in range(max(per_pos) + 1)] if per_pos else []
    gamma = len(positions) or max(1, round(draft_tokens / drafts))
    if positions:  # Leviathan's alpha: accepted / tested, position i tested when i-1 was accepted
        tested = drafts + sum(positions[:-1])
        alpha, alpha_source = sum(positions) / tested, "per-position counts: accepted / tested"
    else:
        alpha, alpha_source = alpha_from_length(accepted / drafts, gamma), "mean acceptance length (i.i.d. model)"
    return {
        "engine": engine, "drafts": drafts, "draft_tokens": draft_tokens, "accepted_tokens": accepted, "gamma": gamma,
        "draft_acceptance_rate": accepted / draft_tokens if draft_tokens else 0.0,
        "mean_acceptance_length": 1 + accepted / drafts,
        "per_position_acceptance": [a / drafts for a in positions],
        "conditional_acceptance": [a / (positions[i - 1] if i else drafts) if (positions[i - 1] if i else drafts) else None
                                   for i, a in enumerate(positions)],
        "alpha": alpha, "alpha_source": alpha_source,
        "models": sorted({dict(k).get("model_name", "") for s in counters.values() for k in s} - {""}),
        "engines": sorted({dict(k).get("engine", "") for s in counters.values() for k in s} - {""}),
        **speed_by_gamma(alpha, gamma, cost_ratio),
    }


def speed_by_gamma(alpha: float, gamma: int, cost_ratio: float | None) -> dict:
    """Thm 3.8's expected speedup for gamma 1..GAMMA_MAX at this alpha and c (tokens per call when c is unknown)."""
    gammas = list(range(1, GAMMA_MAX + 1))
    out = {"cost_ratio_c": cost_ratio,
           "expected_tokens_per_target_call": theory.expected_tokens_per_target_call(alpha, gamma)}
    if cost_ratio is None:
        out.update(expected_speedup_by_gamma=None, best_gamma=None, expected_speedup_now=None)
        return out
    if not (cost_ratio >= 0 and math.isfinite(cost_ratio)):
        raise ValueError(f"--cost-ratio must be a number >= 0, not {cost_ratio!r}")
    curve = {str(g): theory.expected_speedup(alpha, g, cost_ratio) for g in gammas}
    best = theory.optimal_gamma(alpha, cost_ratio, GAMMA_MAX)
    out.update(expected_speedup_by_gamma=curve, best_gamma=best, expected_speedup_best=curve[str(best)],
               expected_speedup_now=curve[str(min(gamma, GAMMA_MAX))])
    return out


def _sglang_figures(samples) -> dict | None:
    values = {key: [v for n, _, v in samples if n == name and math.isfinite(v)] for key, name in SGLANG.items()}
    if not any(values.values()):
        return None
    mean = lambda xs: sum(xs) / len(xs) if xs else None
    return {"engine": "sglang", "mean_acceptance_length": mean(values["accept_length"]),
            "draft_acceptance_rate": mean(values["accept_rate"]), "per_position_acceptance": [], "alpha": None,
            "gamma": None, "series": {k: len(v) for k, v in values.items()},
            "note": "SGLang exports gauges averaged by the server, not counters: no per-position acceptance and no "
                    "rates between scrapes (the later scrape's values are used)"}


def spec_decode_summary(scrapes: list[str], cost_ratio: float | None = None) -> dict:
    """The figures of one scrape (totals since the server started) or two (what happened between them)."""
    if not 1 <= len(scrapes) <= 2:
        raise ValueError(f"--from-metrics takes one or two scrapes, not {len(scrapes)}")
    parsed = [parse_exposition(text) for text in scrapes]
    engine = _engine_of(parsed[-1])
    counters = [_counters(samples, engine) for samples in parsed]
    if any(counters[-1][k] for k in ("drafts", "draft_tokens", "accepted")):
        if len(counters) == 2:
            if not any(counters[0][k] for k in ("drafts", "draft_tokens", "accepted")):
                raise ValueError(f"the first scrape has no {engine} speculative-decoding counters but the second has")
            delta = _difference(counters[0], counters[1], engine)
            return {**_vllm_figures(delta, cost_ratio, engine), "interval": "between the two scrapes"}
        return {**_vllm_figures(counters[0], cost_ratio, engine), "interval": "since the server started"}
    sglang = _sglang_figures(parsed[-1])
    if sglang:
        return {**sglang, "cost_ratio_c": cost_ratio, "interval": "as the server averages it"}
    raise ValueError("the scrape has no speculative-decoding metrics (looked for vllm:spec_decode_num_drafts_total and "
                     "the other vllm:spec_decode_* counters, llamacpp:spec_decode_*, and sglang:spec_accept_length): is speculative "
                     "decoding on, and is this the server's /metrics?")
