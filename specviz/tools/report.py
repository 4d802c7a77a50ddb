"""`python -m specviz report`: acceptance over many prompts, for debugging a draft/target pair.

Runs every prompt (one per line of a file) `runs` times with seeds 0..runs-1 and writes to --out:
  summary.json   the settings, the pair, and specviz.metrics' set under "overall" and per prompt;
  traces.jsonl   one step trace a line, as `generate --json` prints them, plus prompt_index, run_index;
  report.html    self-contained (plotly inlined, opens offline): the analytics figures over all prompts.
Progress goes to stderr.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

from ..core.config import DecodeConfig
from ..core.metrics import metric_set
from ..engine.decoders import SpeculativeDecoder
from ..engine.loading import load_pair
from ..present import run_figures


def read_prompts(path: str | Path) -> list[str]:
    """One prompt a line; blank lines skipped; '\\n' inside a line stands for a newline."""
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except OSError as err:
        raise ValueError(f"cannot read the prompts file {str(path)!r}: {err.strerror or err}") from err
    prompts = [line.replace("\\n", "\n") for line in lines if line.strip()]
    if not prompts:
        raise ValueError(f"the prompts file {str(path)!r} has no prompts (one per line)")
    return prompts


def run_report(prompts: list[str], out_dir: str | Path, *, preset=None, draft=None, target=None, device=None,
               gamma: int = 4, temperature: float = 1.0, runs: int = 1, max_new_tokens: int = 64,
               kl_budget: float = 0.0, progress=sys.stderr) -> dict:
    if isinstance(runs, bool) or not isinstance(runs, int) or not 1 <= runs <= 100:
        raise ValueError(f"runs must be a whole number in 1..100, not {runs!r}")
    pair = load_pair(preset, draft=draft, target=target, device=device)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    configs = [DecodeConfig(gamma=gamma, temperature=temperature, kl_budget=kl_budget, max_new_tokens=max_new_tokens,
                            seed=run) for run in range(runs)]
    all_records, per_prompt, all_traces = [], [], []
    with open(out / "traces.jsonl", "w", encoding="utf-8") as lines:
        for i, prompt in enumerate(prompts):
            records = []
            for run, config in enumerate(configs):
                decoder = SpeculativeDecoder(pair, prompt, config)
                for trace in decoder.run():
                    lines.write(json.dumps({**trace.to_dict(), "prompt_index": i, "run_index": run}) + "\n")
                    all_traces.append(trace)
                records += decoder.records
                print(f"prompt {i + 1}/{len(prompts)} run {run + 1}/{runs}: {decoder.steps} steps, "
                      f"alpha {metric_set(decoder.records)['acceptance_rate']:.3f}", file=progress, flush=True)
            per_prompt.append({"prompt_index": i, "prompt": prompt, **metric_set(records)})
            all_records += records
    summary = {"settings": {"gamma": gamma, "temperature": temperature, "kl_budget": kl_budget, "runs": runs,
                            "max_new_tokens": max_new_tokens, "prompts": len(prompts)},
               "pair": {"name": pair.name, "draft": pair.ref.draft, "target": pair.ref.target, "device": str(pair.device),
                        "dtype": str(pair.dtype).removeprefix("torch.")},
               "overall": metric_set(all_records), "prompts": per_prompt}
    (out / "summary.json").write_text(json.dumps(summary, indent=1), encoding="utf-8")
    (out / "report.html").write_text(report_html(summary, all_traces), encoding="utf-8")
    return summary


def report_html(summary: dict, traces: list) -> str:
    """One self-contained page: the metric table, then the analytics figures (plotly.js inlined)."""
    import html

    overall = summary["overall"]
    rows = "".join(f"<tr><td>{html.escape(p['prompt'][:60])}</td><td>{p['steps']}</td><td>{p['acceptance_rate']:.3f}</td>"
                   f"<td>{p['draft_acceptance_rate']:.3f}</td><td>{p['mean_acceptance_length']:.2f}</td>"
                   f"<td>{p['system_efficiency']:.3f}</td></tr>" for p in summary["prompts"])
    figure = run_figures.analytics_figure(traces, overall)
    body = figure.to_html(full_html=False, include_plotlyjs=True)
    s = summary["settings"]
    return (f"<!doctype html><html><head><meta charset='utf-8'><title>specviz report</title></head>"
            f"<body style='font-family:sans-serif; max-width:1100px; margin:auto'>"
            f"<h1>specviz report: {html.escape(summary['pair']['name'])}</h1>"
            f"<p>γ = {s['gamma']}, T = {s['temperature']}, KL budget {s['kl_budget']}, {s['prompts']} prompts × "
            f"{s['runs']} runs, up to {s['max_new_tokens']} new tokens each; {overall['steps']} steps in all.</p>"
            f"<p>α (accepted / tested) <b>{overall['acceptance_rate']:.3f}</b> · draft acceptance rate (vLLM) "
            f"<b>{overall['draft_acceptance_rate']:.3f}</b> · mean acceptance length <b>{overall['mean_acceptance_length']:.2f}</b>"
            f" · system efficiency <b>{overall['system_efficiency']:.3f}</b></p>"
            f"<table border=1 cellpadding=4 style='border-collapse:collapse'><tr><th>prompt</th><th>steps</th><th>α</th>"
            f"<th>draft acceptance rate</th><th>mean acceptance length</th><th>system efficiency</th></tr>{rows}</table>"
            f"{body}</body></html>")
