"""report.html for a production server's counters: the answer in words, then per-position acceptance
against alpha^i and Thm 3.8's expected speedup by gamma."""
from __future__ import annotations

import html

import plotly.graph_objects as go

from .palette import ACCEPT_COLOUR, FINAL_COLOUR, OVERLAP_COLOUR, TARGET_COLOUR
from .plotting import base_layout, plain_figure
from .report_page import figure_div, forms_table, page, per_request_figure


def production_text(s: dict) -> str:
    """What the counters say, in words."""
    if s["engine"] == "sglang":
        return (f"SGLang reports a mean acceptance length of {s['mean_acceptance_length'] or 0:.2f} and an acceptance "
                f"rate of {s['draft_acceptance_rate'] or 0:.2f} ({s['note']}).")
    parts = [f"{s['interval'].capitalize()}: {s['drafts']:.0f} drafts of γ = {s['gamma']}; draft acceptance rate "
             f"{s['draft_acceptance_rate']:.3f}, mean acceptance length {s['mean_acceptance_length']:.2f}, Leviathan's "
             f"α {s['alpha']:.3f} (from the {s['alpha_source']})."]
    cond = [c for c in s["conditional_acceptance"] if c is not None]
    if len(cond) >= 2 and cond[-1] < cond[0] - 0.1:
        parts.append(f"Acceptance given the earlier drafts were accepted falls from {cond[0]:.2f} at position 1 to "
                     f"{cond[-1]:.2f} at position {len(cond)}: later drafts are worse than an i.i.d. α predicts.")
    if s.get("best_gamma"):
        parts.append(f"At cost ratio c = {s['cost_ratio_c']:.3f} ({s['cost_ratio_source']}) Thm 3.8 expects "
                     f"×{s['expected_speedup_now']:.2f} at the current γ {s['gamma']} and ×{s['expected_speedup_best']:.2f} "
                     f"at the best γ {s['best_gamma']}.")
    else:
        parts.append(f"Each target pass yields {s['expected_tokens_per_target_call']:.2f} tokens in expectation; "
                     "give --cost-ratio (or a pair) for the expected speedup by γ.")
    return " ".join(parts)


def position_figure(s: dict) -> go.Figure:
    n = len(s["per_position_acceptance"])
    xs = list(range(1, n + 1))
    data = [{"type": "bar", "x": xs, "y": s["per_position_acceptance"], "name": "per-position acceptance (vLLM)",
             "marker": {"color": TARGET_COLOUR}},
            {"type": "scatter", "x": xs, "y": [s["alpha"] ** i for i in xs], "mode": "lines+markers",
             "name": f"α^i at α {s['alpha']:.3f}", "line": {"color": OVERLAP_COLOUR, "dash": "dot"}},
            {"type": "scatter", "x": xs, "y": s["conditional_acceptance"], "mode": "lines+markers",
             "name": "accepted given the earlier ones were", "line": {"color": FINAL_COLOUR}}]
    return plain_figure(data, base_layout("Acceptance by drafted position", 340, xaxis={"title": {"text": "position"}, "dtick": 1},
                                          yaxis={"range": [0, 1.05], "title": {"text": "share of drafts"}}))


def speedup_curve_figure(s: dict) -> go.Figure:
    curve = s["expected_speedup_by_gamma"]
    gammas = [int(g) for g in curve]
    data = [{"type": "scatter", "x": gammas, "y": list(curve.values()), "mode": "lines", "name": "Thm 3.8",
             "line": {"color": OVERLAP_COLOUR}},
            {"type": "scatter", "x": [s["gamma"], s["best_gamma"]], "y": [s["expected_speedup_now"], s["expected_speedup_best"]],
             "mode": "markers+text", "text": ["current γ", "best γ"], "textposition": "top center",
             "marker": {"symbol": ["circle", "star"], "size": 13, "color": [TARGET_COLOUR, ACCEPT_COLOUR]},
             "name": "current and best γ"}]
    return plain_figure(data, base_layout(f"Expected speedup by γ at α {s['alpha']:.3f}, c {s['cost_ratio_c']:.3f}", 340,
                                          xaxis={"title": {"text": "γ"}, "dtick": 1},
                                          yaxis={"title": {"text": "expected speedup (×)"},
                                                 "range": [0, 1.25 * max(curve.values())]}))


def production_html(s: dict) -> str:
    body = (f"<h1>specviz report: production metrics ({html.escape(s['engine'])})</h1>"
            f"<p class='muted'>{html.escape(s['source'])}; models {html.escape(', '.join(s.get('models') or []) or '–')}; "
            f"engines {html.escape(', '.join(s.get('engines') or []) or '–')}.</p>"
            f"<div class='answer' id='diagnosis'><b>What the counters say.</b> {html.escape(production_text(s))}</div>")
    if s["per_position_acceptance"]:
        body += figure_div(position_figure(s), "positions")
    if s.get("expected_speedup_by_gamma"):
        body += figure_div(speedup_curve_figure(s), "speedup-by-gamma")
    if s.get("per_request"):  # vLLM's per-request stats from response bodies
        by_gamma = {str(s["gamma"] or 0): {"per_request": s["per_request"]}}
        body += ("<h2>Per request</h2><p class='muted'>vLLM's per-request stats (metrics.speculative_decoding in each "
                 f"response body): {html.escape(s.get('per_request_interval') or s['interval'])}.</p>"
                 + figure_div(per_request_figure(by_gamma), "per-request-histogram") + forms_table(by_gamma))
    return page("specviz report: production metrics", body)
