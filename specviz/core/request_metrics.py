"""vLLM's per-request speculative-decoding stats, read from saved response bodies (pure functions).

vLLM's `--per-request-spec-decode-metrics summary|detailed` (experimental; vllm-project/vllm PR #48915) puts
each request's acceptance stats into its OpenAI-API response body, not into /metrics. The shape, from
vllm-project/vllm `docs/features/speculative_decoding/acceptance_metrics.md` ("Per-Request Acceptance
Metrics") and its end-to-end test (`_validate_detailed_metrics`):

  body["metrics"]["speculative_decoding"] = {
    "mean_acceptance_length": 1 + num_accepted_draft_tokens / num_spec_steps  (bonus token included),
    "draft_acceptance_rate": num_accepted_draft_tokens / num_draft_tokens,
    "acceptance_histogram": [steps accepting exactly j drafts, j = 0..num_spec_tokens] (bonus excluded),
    "acceptance_histogram_by_draft_length": {"k": [k + 1 buckets]}   (newer versions; keys are strings),
    "num_spec_steps": sum(acceptance_histogram),
    "num_accepted_draft_tokens", "num_draft_tokens", "num_spec_tokens" (the configured k),
    "per_step_accepted", "per_step_drafted": one entry per verification step ("detailed" only),
  }
or null (n > 1, or speculative decoding off). In a stream it rides the final usage chunk (`data: {...}`).

A file here is a JSON array of bodies, one body, or JSON Lines (one body a line; `data: ` prefixes and
`data: [DONE]` of a saved stream are accepted). Each body with stats is one request. Its rounds come from
`per_step_accepted`/`per_step_drafted` when present, else from `acceptance_histogram_by_draft_length`,
else from `acceptance_histogram` with every step drafting `num_spec_tokens` (a step whose drafts a grammar
cut short then counts as drafting k). A round that accepted a of d drafts tested min(a + 1, d) of them.
"""
from __future__ import annotations

import json
import math
from typing import NamedTuple

from .conventions import acceptance_length_histogram, pooled_and_per_request
from .production import speed_by_gamma

FIELDS = ("acceptance_histogram", "num_spec_steps", "num_accepted_draft_tokens", "num_draft_tokens", "num_spec_tokens")
MAX_REQUESTS = 1_000_000


class Round(NamedTuple):
    """One verification step of a request: drafts accepted, drafted, tested (what conventions' forms take)."""
    n_accepted: int
    n_drafted: int

    @property
    def n_examined(self) -> int:
        return min(self.n_accepted + 1, self.n_drafted)


def looks_like_bodies(text: str) -> bool:
    """True when `text` is JSON (response bodies) rather than a Prometheus exposition."""
    head = text.lstrip()
    return head.startswith(("{", "[")) or head.startswith("data:")


def parse_bodies(text: str, source: str = "the file") -> list:
    """The response bodies in `text`: a JSON array, one JSON object, or JSON Lines (SSE `data: ` allowed)."""
    stripped = text.strip()
    if stripped.startswith(("[", "{")):
        try:
            whole = json.loads(stripped)
            return whole if isinstance(whole, list) else [whole]
        except RecursionError:
            raise ValueError(f"{source}: JSON nested too deeply to be a response body") from None
        except ValueError:
            pass  # JSON Lines
    bodies = []
    for number, line in enumerate(stripped.splitlines(), 1):
        line = line.strip()
        if line.startswith("data:"):
            line = line[5:].strip()
        if not line or line == "[DONE]":
            continue
        try:
            bodies.append(json.loads(line))
        except RecursionError:
            raise ValueError(f"{source}: line {number} is JSON nested too deeply to be a response body") from None
        except ValueError as err:
            raise ValueError(f"{source}: line {number} is not JSON ({err.msg}): {line[:60]!r}") from None
    return bodies


def _count(stats: dict, key: str, where: str) -> int:
    value = stats.get(key)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0 \
            or value != int(value):
        raise ValueError(f"{where}: metrics.speculative_decoding.{key} must be a whole number >= 0, not {value!r}")
    return int(value)


def _counts(values, key: str, where: str) -> list[int]:
    if not isinstance(values, list):
        raise ValueError(f"{where}: metrics.speculative_decoding.{key} must be a list of whole numbers, not {values!r}")
    return [_count({key: v}, key, where) for v in values]


def stats_of(body) -> dict | None:
    """A body's metrics.speculative_decoding (None when absent or null)."""
    metrics = body.get("metrics") if isinstance(body, dict) else None
    stats = metrics.get("speculative_decoding") if isinstance(metrics, dict) else None
    return stats if isinstance(stats, dict) else None


def rounds_of(stats: dict, where: str = "request") -> list[Round]:
    """The request's verification steps (order kept when the detailed arrays are there)."""
    for key in FIELDS:
        if key not in stats:
            raise ValueError(f"{where}: metrics.speculative_decoding has no {key} (vLLM's per-request fields: "
                             f"{', '.join(FIELDS)})")
    k = _count(stats, "num_spec_tokens", where)
    if stats.get("per_step_accepted") is not None:
        accepted = _counts(stats["per_step_accepted"], "per_step_accepted", where)
        drafted = _counts(stats.get("per_step_drafted"), "per_step_drafted", where)
        if len(accepted) != len(drafted) or any(a > d for a, d in zip(accepted, drafted)):
            raise ValueError(f"{where}: per_step_accepted and per_step_drafted must pair up step by step, "
                             "each accepted count at most its drafted count")
        rounds = [Round(a, d) for a, d in zip(accepted, drafted)]
    elif isinstance(stats.get("acceptance_histogram_by_draft_length"), dict):
        rounds = []
        for length, buckets in stats["acceptance_histogram_by_draft_length"].items():
            if not str(length).isdigit():
                raise ValueError(f"{where}: acceptance_histogram_by_draft_length's keys must be draft lengths "
                                 f"(whole numbers >= 0), not {length!r}")
            d = int(length)
            rounds += [Round(j, d) for j, n in enumerate(_counts(buckets, "acceptance_histogram_by_draft_length", where))
                       for _ in range(n)]
    else:
        histogram = _counts(stats["acceptance_histogram"], "acceptance_histogram", where)
        rounds = [Round(j, k) for j, n in enumerate(histogram) for _ in range(n)]
    steps = _count(stats, "num_spec_steps", where)
    accepted = _count(stats, "num_accepted_draft_tokens", where)
    if len(rounds) != steps or sum(r.n_accepted for r in rounds) != accepted:
        raise ValueError(f"{where}: the steps do not add up (num_spec_steps {steps}, num_accepted_draft_tokens "
                         f"{accepted}; the histogram or per-step arrays give {len(rounds)} and "
                         f"{sum(r.n_accepted for r in rounds)})")
    return rounds


def requests_from_bodies(bodies: list) -> tuple[list[list[Round]], list, int]:
    """(each request's rounds, each request's model name, bodies without stats)."""
    requests, models, skipped = [], [], 0
    for i, body in enumerate(bodies[:MAX_REQUESTS]):
        stats = stats_of(body)
        if stats is None:
            skipped += 1
            continue
        requests.append(rounds_of(stats, f"response {i + 1}"))
        models.append(body.get("model", "") if isinstance(body, dict) else "")
    return requests, models, skipped


def per_request_figures(requests: list[list[Round]]) -> dict:
    """conventions' pooled and per-request forms, plus requests binned by their own acceptance length."""
    forms = pooled_and_per_request(requests)
    return {**forms, "acceptance_length_histogram": acceptance_length_histogram(forms["acceptance_length_per_request"])}


def requests_summary(bodies: list, cost_ratio: float | None = None) -> dict:
    """The production summary (the same keys as production.spec_decode_summary for vLLM) of per-request stats,
    with `per_request` holding the pooled and per-request forms and the histogram of requests."""
    requests, models, skipped = requests_from_bodies(bodies)
    rounds = [r for req in requests for r in req]
    if not rounds:
        raise ValueError(f"no per-request speculative-decoding stats with a step in {len(bodies)} response bodies "
                         "(metrics.speculative_decoding): start vLLM with --per-request-spec-decode-metrics summary "
                         "(or detailed) and keep n = 1")
    steps = len(rounds)
    accepted = sum(r.n_accepted for r in rounds)
    drafted = sum(r.n_drafted for r in rounds)
    tested = sum(r.n_examined for r in rounds)
    gamma = max(r.n_drafted for r in rounds) or 1
    per_position = [sum(r.n_accepted > i for r in rounds) / steps for i in range(gamma)]
    conditional = [a / (per_position[i - 1] if i else 1.0) if (per_position[i - 1] if i else 1.0) else None
                   for i, a in enumerate(per_position)]
    alpha = accepted / tested if tested else 0.0
    return {
        "engine": "vllm", "drafts": steps, "draft_tokens": drafted, "accepted_tokens": accepted, "gamma": gamma,
        "draft_acceptance_rate": accepted / drafted if drafted else 0.0,
        "mean_acceptance_length": 1 + accepted / steps,
        "per_position_acceptance": per_position, "conditional_acceptance": conditional,
        "alpha": alpha, "alpha_source": "per-request steps: accepted / tested",
        "models": sorted(set(models) - {""}), "engines": [],
        "interval": f"per request ({len(requests)} requests, {skipped} bodies without stats)",
        "per_request": per_request_figures(requests), "bodies_without_stats": skipped,
        **speed_by_gamma(alpha, gamma, cost_ratio),
    }
