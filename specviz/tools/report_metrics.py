"""`python -m specviz report --from-metrics FILE_OR_URL [--from-metrics SECOND]`: a server's counters.

Reads one or two Prometheus scrapes of a vLLM (or SGLang) server, from files or http(s) URLs, and/or
files of vLLM response bodies carrying per-request stats (`--per-request-spec-decode-metrics`; JSON Lines
or a JSON array, see `specviz.core.request_metrics`), and writes summary.json and report.html to --out: draft acceptance rate, mean acceptance length,
per-position acceptance, Leviathan's alpha implied by the per-position counts, and the expected
speedup by gamma at a cost ratio c (--cost-ratio, or measured on --preset/--draft/--target).
"""
from __future__ import annotations

import json
import urllib.error
import urllib.request
from pathlib import Path

from ..core.production import spec_decode_summary
from ..core.request_metrics import looks_like_bodies, parse_bodies, requests_summary
from ..present import production_page

DEFINITIONS = {
    "draft_acceptance_rate": "accepted / drafted tokens (vLLM's and llama.cpp's counters; SGLang: its spec_accept_rate "
                             "gauge as the server averages it)",
    "mean_acceptance_length": "tokens per round, the bonus token included: 1 + accepted / drafts (SGLang: its "
                              "spec_accept_length gauge, bonus included)",
    "per_position_acceptance": "accepted at position i / drafts (unconditional, vLLM's form)",
    "conditional_acceptance": "accepted at position i / accepted at position i - 1 (over tested drafts)",
    "alpha": "Leviathan's α: accepted / tested drafts",
    "per_request": "vLLM's per-request stats (response bodies): each body with metrics.speculative_decoding is one "
                   "request; acceptance length pooled (1 + all accepted / all steps) beside its mean over requests, "
                   "and requests binned by their own acceptance length (0.25 tokens wide)",
}
FETCH_TIMEOUT_S = 10
MAX_SCRAPE_BYTES = 64 * 2**20


def read_scrape(source: str) -> str:
    """A scrape's text from a file or an http(s) URL; ValueError naming the source when it cannot be read."""
    if source.startswith(("http://", "https://")):
        try:
            with urllib.request.urlopen(source, timeout=FETCH_TIMEOUT_S) as response:
                return response.read(MAX_SCRAPE_BYTES).decode("utf-8", "replace")
        except (urllib.error.URLError, OSError, ValueError) as err:
            reason = getattr(err, "reason", None) or err
            raise ValueError(f"cannot fetch the metrics URL {source!r}: {reason}") from err
    try:
        return Path(source).read_text(encoding="utf-8")
    except OSError as err:
        raise ValueError(f"cannot read the metrics file {source!r}: {err.strerror or err}") from err
    except UnicodeDecodeError as err:
        raise ValueError(f"cannot read the metrics file {source!r}: not UTF-8 text (byte {err.start})") from err


def measured_cost_ratio(preset=None, draft=None, target=None, device=None, tokens: int = 32) -> float:
    """c measured on a pair: one short compared run at gamma 4 (draft forward / target forward)."""
    from ..core.config import DecodeConfig
    from ..engine.models.loading import load_pair
    from ..engine.serving.run import ComparedRun, RunSettings, WarmRuns

    pair = load_pair(preset, draft=draft, target=target, device=device)
    prompt = pair.examples[0] if pair.examples else "The"
    run = ComparedRun(RunSettings(pair.ref, prompt, DecodeConfig(gamma=4, max_new_tokens=tokens), device=str(pair.device)),
                      stateless=False, warm=WarmRuns(1))
    while not run.finished:
        run.step()
    return run.metrics()["cost_ratio_c"]


def metrics_summary(sources: list[str], texts: list[str], cost_ratio: float | None = None) -> dict:
    """The summary of scrapes and/or response-body files: the scrapes' counters when there are scrapes (the
    bodies then add `per_request`), else the bodies' own totals (they reconcile with vLLM's counters)."""
    bodies = [b for s, t in zip(sources, texts) if looks_like_bodies(t) for b in parse_bodies(t, s)]
    scrapes = [t for t in texts if not looks_like_bodies(t)]
    if not bodies and len(scrapes) < len(texts):
        raise ValueError("the response-body files hold no JSON bodies")
    if not scrapes:
        return requests_summary(bodies, cost_ratio)
    summary = spec_decode_summary(scrapes, cost_ratio)
    if bodies:
        per_request = requests_summary(bodies, cost_ratio)
        summary.update(per_request=per_request["per_request"], per_request_interval=per_request["interval"])
    return summary


def run_metrics_report(sources: list[str], out_dir, *, cost_ratio: float | None = None, preset=None, draft=None,
                       target=None, device=None) -> dict:
    # 1. the scrapes and response bodies, read before any model loads
    texts = [read_scrape(s) for s in sources]
    summary = metrics_summary(sources, texts, cost_ratio)  # validates cost_ratio and the counters
    # 2. c measured on the pair when one is named and c was not given
    if cost_ratio is None and (preset or draft or target):
        summary = metrics_summary(sources, texts, measured_cost_ratio(preset, draft, target, device))
        summary["cost_ratio_source"] = "measured on the pair"
    else:
        summary["cost_ratio_source"] = "--cost-ratio" if cost_ratio is not None else None
    summary["source"] = " then ".join(sources)
    summary["definitions"] = DEFINITIONS
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    (out / "summary.json").write_text(json.dumps(summary, indent=1), encoding="utf-8")
    (out / "report.html").write_text(production_page.production_html(summary), encoding="utf-8")
    return summary
