"""`python -m specviz report --from-traces TRACE --out DIR`: the report of a recorded run, no model loaded.

A colleague's traces.jsonl (or a lesson, or a run exported from the page) gives every acceptance figure the
report computes from the rounds: α, acceptance length, per position, per request, the rejection analysis and
its diagnosis. What needs the models is left out and said: the temperature sweep, and the speedup where the
file holds no target-only times (a traces.jsonl does not).
"""
from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

from ..core import rejections
from ..core.config import GAMMA_AUTO
from ..core.metrics import metric_set
from ..present import report_page
from .replay import read_trace_file
from .report import ReportRuns, per_request_forms, report_summary


def gamma_of(trace) -> int | str:
    """The gamma a round ran under: its own, or `auto` for a round whose length the rule chose (it records why)."""
    return GAMMA_AUTO if trace.draft_stop is not None else trace.gamma


def runs_from(recording) -> ReportRuns:
    """The recording's rounds grouped as `run_report` groups live ones: by gamma (the fixed ones, then auto), then
    prompt and run."""
    done = ReportRuns()
    found = {gamma_of(t) for run in recording.runs for t in run.traces}
    gammas = sorted(g for g in found if g != GAMMA_AUTO) + [g for g in found if g == GAMMA_AUTO]
    first = gammas[0] if gammas else None
    for g in gammas:
        g_records, requests = [], []
        for run in recording.runs:
            traces = [t for t in run.traces if gamma_of(t) == g]
            records = [t.record for t in traces if t.record is not None]
            if not traces:
                continue
            requests.append(records)
            g_records += records
            done.rows += rejections.tested_drafts(traces, run.prompt_index)
            done.all_traces += traces
            if g == first:
                done.primary["records"] += records
                if run.run_index == 0:
                    done.panels.append((run.prompt or f"prompt {run.prompt_index + 1}", traces))
        done.by_gamma[str(g)] = {**metric_set(g_records), "per_request": per_request_forms(requests)}
        if g != GAMMA_AUTO:  # as run_report: the fixed gammas' rounds are what the best gamma is predicted from
            done.pooled_records += g_records
    if first is not None:
        for i in sorted({run.prompt_index for run in recording.runs}):
            records = [t.record for run in recording.runs if run.prompt_index == i for t in run.traces
                       if gamma_of(t) == first and t.record is not None]
            prompt = next((run.prompt for run in recording.runs if run.prompt_index == i), "")
            done.primary["prompts"].append({"prompt_index": i, "prompt": prompt, **metric_set(records)})
    return done


def run_traces_report(path: str, out_dir: str) -> dict:
    """summary.json and report.html of the recording at `path`, written to `out_dir`."""
    recording = read_trace_file(path)
    done = runs_from(recording)
    settings = {k: v for k, v in recording.settings.items()}
    temperature = next((t.temperature for run in recording.runs for t in run.traces), 1.0)
    fixed = sorted(int(g) for g in done.by_gamma if g != GAMMA_AUTO)
    settings.update({"gamma": fixed[0] if fixed else GAMMA_AUTO,
                     "gammas": fixed + [GAMMA_AUTO for g in done.by_gamma if g == GAMMA_AUTO],
                     "temperature": settings.get("temperature", temperature), "prompts": len(done.primary["prompts"])})
    producer = recording.producer
    pair = SimpleNamespace(name=settings.get("preset") or "recorded run",
                           ref=SimpleNamespace(draft=settings.get("draft_model", ""), target=settings.get("target_model", "")),
                           device=producer.device if producer else "not recorded",
                           dtype=producer.dtype if producer else "not recorded",
                           draft_dtype=producer.dtype if producer else "not recorded")
    summary = report_summary(done, pair, settings)
    summary["source"] = {"trace_file": Path(path).name, "runs": len(recording.runs), "steps": recording.steps,
                         "producer": producer.__dict__ if producer else None,
                         "not_from_a_trace_file": "the temperature sweep; the speedup (no target-only times recorded)"}
    out = Path(out_dir)
    (out / "summary.json").write_text(json.dumps(summary, indent=1), encoding="utf-8")
    (out / "report.html").write_text(report_page.report_html(summary, done.panels), encoding="utf-8")
    return summary
