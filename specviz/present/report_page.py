"""The report's one self-contained page: the answer first (diagnosis, best gamma, speedup by gamma beside
Thm 3.8), then per-prompt panels, the rejection analysis as figures and the tables.

plotly.js is inlined once in <head> (offline, about 4.8 MB); each figure is a div and its JSON.
The same page serves a production scrape (`production_html`), with the figures that counters allow.
"""
from __future__ import annotations

import html

import plotly.graph_objects as go
from plotly.offline import get_plotlyjs

from ..core.config import GAMMA_MAX
from ..core.notation import show
from .palette import ACCEPT_COLOUR, MUTED, OVERLAP_COLOUR, REJECT_COLOUR, TARGET_COLOUR
from .plotting import base_layout, plain_figure

MAX_PANELS = 12  # prompts drawn as panels; the table lists them all
STYLE = ("body{font-family:sans-serif;max-width:1100px;margin:auto;padding:0 12px;color:#222}"
         ".answer{background:#f3f7f5;border-left:5px solid " + ACCEPT_COLOUR + ";padding:10px 16px;font-size:16px}"
         "table{border-collapse:collapse;margin:8px 0}td,th{border:1px solid #ccc;padding:3px 8px;text-align:right}"
         "td:first-child,th:first-child{text-align:left}.muted{color:" + MUTED + "}")


def _r(values, digits=4):
    return [None if v is None else round(v, digits) for v in values]


def speedup_figure(by_gamma: dict, best: dict) -> go.Figure:
    """Measured speedup per gamma (± its standard error) beside the prediction with the measured verify costs and
    Thm 3.8's (a verify costing one forward), at each γ's own α and c and as curves at the pooled ones."""
    gammas = sorted(int(g) for g in by_gamma)
    measured = [by_gamma[str(g)]["speedup"] for g in gammas]
    stderr = [by_gamma[str(g)]["speedup_stderr"] or 0 for g in gammas]
    data = [{"type": "scatter", "x": gammas, "y": _r(measured), "mode": "markers+lines", "name": "measured speedup",
             "error_y": {"type": "data", "array": _r(stderr), "visible": True},
             "marker": {"symbol": "diamond", "size": 12, "color": ACCEPT_COLOUR}, "line": {"color": ACCEPT_COLOUR}},
            {"type": "scatter", "x": gammas, "y": _r([by_gamma[str(g)]["predicted_speedup_thm38"] for g in gammas]),
             "mode": "markers", "name": "Thm 3.8 at each γ's own α and c",
             "marker": {"symbol": "circle-open", "size": 11, "color": TARGET_COLOUR}}]
    if any(by_gamma[str(g)].get("predicted_speedup") is not None for g in gammas):
        data.append({"type": "scatter", "x": gammas, "y": _r([by_gamma[str(g)].get("predicted_speedup") for g in gammas]),
                     "mode": "markers", "name": "predicted: measured V(γ + 1), the round's host work,<br>the budget's cut",
                     "marker": {"symbol": "square-open", "size": 11, "color": ACCEPT_COLOUR}})
    if best.get("predicted_curve"):
        data.append({"type": "scatter", "x": list(range(1, len(best["predicted_curve"]) + 1)),
                     "y": _r(best["predicted_curve"]), "mode": "lines",
                     "name": f"predicted with V(n) and the round's host work,<br>pooled acceptance by depth, c "
                             f"{best['cost_ratio_c']:.2f}",
                     "line": {"color": ACCEPT_COLOUR, "dash": "dash"}})
    if best.get("thm38_curve"):
        data.append({"type": "scatter", "x": list(range(1, GAMMA_MAX + 1)), "y": _r(best["thm38_curve"]), "mode": "lines",
                     "name": f"Thm 3.8 (a verify costing one forward)<br>at pooled α {best['alpha']:.2f}, "
                             f"c {best['cost_ratio_c']:.2f}",
                     "line": {"color": OVERLAP_COLOUR, "dash": "dot"}})
    # up to five legend entries, some of two lines, each on its own line at a phone's width: below the axis title,
    # where they push the bottom margin (plotly's autoexpand), not over the title in the one line base_layout keeps
    layout = base_layout("Is it faster? Speedup over target-only by γ", 380 + 34 * len(data),
                         xaxis={"title": {"text": "γ"}, "dtick": 1},
                         yaxis={"title": {"text": "speedup (×)"}, "rangemode": "tozero"},
                         shapes=[{"type": "line", "xref": "paper", "x0": 0, "x1": 1, "y0": 1, "y1": 1,
                                  "line": {"color": MUTED, "width": 1, "dash": "dash"}}],
                         margin={"l": 50, "r": 20, "t": 50, "b": 40},
                         legend={"orientation": "h", "yanchor": "top", "y": -0.2, "xanchor": "left", "x": 0})
    return plain_figure(data, layout)


def prompt_panels_figure(panels: list[tuple[str, list]]) -> go.Figure:
    """One small panel per prompt: drafts accepted at each step (run 0 of the first γ), never joined across prompts."""
    panels = panels[:MAX_PANELS]
    n, cols = len(panels), 2 if len(panels) > 1 else 1
    rows = (n + cols - 1) // cols
    data, layout_axes = [], {}
    gap = 0.12 / max(rows, 1)
    for i, (prompt, traces) in enumerate(panels):
        row, col = divmod(i, cols)
        ax = "" if i == 0 else str(i + 1)
        y1 = 1 - row / rows
        y0 = y1 - 1 / rows + gap
        x0 = col / cols + (0.04 if col else 0)
        x1 = (col + 1) / cols - (0.04 if cols > 1 and col == 0 else 0)
        gamma = traces[0].gamma if traces else 1
        colours = [ACCEPT_COLOUR if t.correction.kind == "bonus" else REJECT_COLOUR for t in traces]
        data.append({"type": "bar", "x": [t.step for t in traces], "y": [t.n_accepted for t in traces],
                     "marker": {"color": colours}, "showlegend": False, "xaxis": f"x{ax}", "yaxis": f"y{ax}",
                     "hovertemplate": "step %{x}: %{y} accepted<extra></extra>"})
        layout_axes[f"xaxis{ax}"] = {"domain": [x0, x1], "anchor": f"y{ax}", "title": {"text": "step", "standoff": 2}}
        layout_axes[f"yaxis{ax}"] = {"domain": [y0, y1 - 0.06 / rows], "anchor": f"x{ax}", "range": [0, gamma + 0.3],
                                     "dtick": 1 if gamma <= 8 else None}
        title = prompt.replace("\n", " / ")[:50]
        layout_axes.setdefault("annotations", []).append(
            {"text": f"<b>{html.escape(title)}</b> — α {_alpha(traces):.2f}, {len(traces)} steps", "xref": "paper",
             "yref": "paper", "x": x0, "y": y1, "xanchor": "left", "yanchor": "bottom", "showarrow": False,
             "font": {"size": 12}})
    height = 80 + 200 * rows
    layout = base_layout("Each prompt on its own: drafts accepted per step (green: all accepted, bonus token)",
                         height, **layout_axes)
    layout["margin"] = {"l": 40, "r": 20, "t": 70, "b": 30}
    return plain_figure(data, layout)


def _alpha(traces) -> float:
    tested = sum(sum(p.uniform is not None for p in t.positions) for t in traces)
    return sum(t.n_accepted for t in traces) / tested if tested else 0.0


SPLITS = (("by_position", "drafted position"), ("by_draft_prob", "draft's q of its own token"),
          ("by_target_entropy", "target entropy H(p), nats"), ("by_token_class", "token class"),
          ("by_prompt", "prompt"))


def rejection_figure(analysis: dict) -> go.Figure:
    """Acceptance of tested drafts split five ways, each bar with its 95% Wilson interval and its n."""
    data, axes = [], {}
    for i, (key, title) in enumerate(SPLITS):
        groups = analysis.get(key, [])
        ax = "" if i == 0 else str(i + 1)
        labels = [(f"#{g['group'] + 1}" if key == "by_prompt" else str(g["group"])) + f"<br>n={g['n']}" for g in groups]
        rates = [g["rate"] for g in groups]
        data.append({"type": "bar", "x": labels, "y": _r(rates),
                     "error_y": {"type": "data", "symmetric": False, "visible": True,
                                 "array": _r([g["ci_high"] - g["rate"] for g in groups]),
                                 "arrayminus": _r([g["rate"] - g["ci_low"] for g in groups])},
                     "marker": {"color": TARGET_COLOUR}, "showlegend": False, "xaxis": f"x{ax}", "yaxis": f"y{ax}",
                     "hovertemplate": "%{x}: %{y:.2f}<extra></extra>"})
        row, col = divmod(i, 2)
        y1 = 1 - row / 3
        axes[f"xaxis{ax}"] = {"domain": [col * 0.53, col * 0.53 + 0.47], "anchor": f"y{ax}", "type": "category",
                              "title": {"text": title, "standoff": 4}}
        axes[f"yaxis{ax}"] = {"domain": [y1 - 0.24, y1 - 0.02], "anchor": f"x{ax}", "range": [0, 1.05],
                              "title": {"text": "accepted"}}
    layout = base_layout("Why does it reject? Acceptance of tested drafts (95% Wilson intervals)", 820, **axes)
    layout["margin"] = {"l": 55, "r": 20, "t": 60, "b": 40}
    return plain_figure(data, layout)


def figure_div(fig: go.Figure, div_id: str) -> str:
    return fig.to_html(full_html=False, include_plotlyjs=False, div_id=div_id, config={"displaylogo": False})


def page(title: str, body: str) -> str:
    """The whole document: plotly.js once, inlined in <head>."""
    return (f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
            f"<style>{STYLE}</style><script type='text/javascript'>{get_plotlyjs()}</script></head>"
            f"<body>{body}</body></html>")


def _fmt(x, spec=".2f"):
    return "–" if x is None else format(x, spec)


def gamma_table(by_gamma: dict) -> str:
    rows = "".join(
        f"<tr><td>{g}</td><td>{_fmt(m['acceptance_rate'], '.3f')}</td><td>{_fmt(m['tokens_per_target_call'])}</td>"
        f"<td>{_fmt(m['speedup'])} ± {_fmt(m['speedup_stderr'])}</td><td>{_fmt(m.get('predicted_speedup'))}</td>"
        f"<td>{_fmt(m['predicted_speedup_thm38'])}</td><td>{_fmt(m.get('verify_cost'))}</td>"
        f"<td>{_fmt(m.get('verify_cost_in_run'))}</td><td>{_fmt(m['cost_ratio_c'], '.3f')}</td>"
        f"<td>{_fmt(m.get('round_host_share'))}</td><td>{m['steps']}</td></tr>"
        for g, m in sorted(by_gamma.items(), key=lambda kv: int(kv[0])))
    return ("<table><tr><th>γ</th><th>α</th><th>tokens per target call</th><th>measured speedup ± s.e.</th>"
            "<th>predicted (measured V, host work, budget)</th><th>Thm 3.8 (V = 1)</th><th>V(γ + 1) measured</th><th>V(γ + 1) in the run</th>"
            f"<th>cost ratio c</th><th>round's host share</th><th>steps</th></tr>{rows}</table>")


def most_rejected_table(analysis: dict) -> str:
    items = analysis.get("most_rejected", [])
    rule = f"tokens tested at least {analysis.get('min_support', 0)} times"
    if not items:
        return f"<p class='muted'>No token rejected among the {rule}.</p>"
    rows = "".join(f"<tr><td><code>{html.escape(show(t['token']))}</code></td><td>{t['rejected']} of {t['n']}</td>"
                   f"<td>{t['rejection_rate']:.2f}</td><td>{t['ci_low']:.2f}–{t['ci_high']:.2f}</td></tr>" for t in items)
    return (f"<p class='muted'>Listed: {rule} (95% Wilson interval of the rejection rate).</p><table><tr><th>token</th>"
            f"<th>rejected</th><th>rejection rate</th><th>95% interval</th></tr>{rows}</table>")


def prompt_table(prompts: list[dict]) -> str:
    rows = "".join(f"<tr><td>#{p['prompt_index'] + 1} {html.escape(show(p['prompt'])[:60])}</td><td>{p['steps']}</td>"
                   f"<td>{p['acceptance_rate']:.3f}</td><td>{p['draft_acceptance_rate']:.3f}</td>"
                   f"<td>{p['mean_acceptance_length']:.2f}</td><td>{_fmt(p['speedup'])}</td></tr>" for p in prompts)
    return ("<table><tr><th>prompt</th><th>steps</th><th>α</th><th>draft acceptance rate</th>"
            f"<th>mean acceptance length</th><th>speedup</th></tr>{rows}</table>")


def per_request_figure(by_gamma: dict, title: str = "Per request: requests by acceptance length (tokens a round, "
                       "bonus included)", x_title: str = "acceptance length", y_title: str = "requests",
                       series: str = "γ {g}") -> go.Figure:
    """Requests (prompt × run) by their own acceptance length, one bar series per γ: a degenerate prompt shows apart.
    The words default to the report's English; the app passes its own language's."""
    data = []
    for g, m in sorted(by_gamma.items(), key=lambda kv: int(kv[0])):
        h = m.get("per_request", {}).get("acceptance_length_histogram") or {"edges": [], "counts": []}
        data.append({"type": "bar", "x": [f"{a:g}–{b:g}" for a, b in zip(h["edges"], h["edges"][1:])], "y": h["counts"],
                     "name": series.format(g=g)})
    most = max((max(d["y"], default=0) for d in data), default=0)
    return plain_figure(data, base_layout(title, 320, barmode="group", xaxis={"title": {"text": x_title},
                                                                           "type": "category"},
                                          yaxis={"title": {"text": y_title}, "rangemode": "tozero",
                                                 **({"dtick": 1} if most <= 10 else {})}))  # whole requests


def forms_table(by_gamma: dict) -> str:
    """Pooled beside per-request α and acceptance length, per γ."""
    rows = "".join(f"<tr><td>{g}</td><td>{f['requests']}</td><td>{f['alpha_pooled']:.3f}</td>"
                   f"<td>{f['alpha_mean_over_requests']:.3f}</td><td>{f['acceptance_length_pooled']:.2f}</td>"
                   f"<td>{f['acceptance_length_mean_over_requests']:.2f}</td></tr>"
                   for g, f in sorted(((g, m["per_request"]) for g, m in by_gamma.items() if "per_request" in m),
                                      key=lambda kv: int(kv[0])))
    return ("<table id='pooled-per-request'><tr><th>γ</th><th>requests</th><th>α pooled</th><th>α mean over requests</th>"
            "<th>acceptance length pooled</th><th>acceptance length mean over requests</th></tr>" + rows + "</table>")


def conventions_table(items: list[dict]) -> str:
    rows = "".join(f"<tr><td>{html.escape(c['tool'])}</td><td>{html.escape(c['figure'])}</td>"
                   f"<td>{html.escape(c['quotient'])}</td><td>{c['per']}</td><td>{c['bonus']}</td></tr>" for c in items)
    return ("<table id='conventions'><tr><th>tool</th><th>figure</th><th>quotient</th><th>per</th>"
            f"<th>bonus token</th></tr>{rows}</table>")


def definitions_list(definitions: dict) -> str:
    return "<ul id='definitions'>" + "".join(f"<li><code>{html.escape(k)}</code>: {html.escape(v)}</li>"
                                             for k, v in definitions.items()) + "</ul>"


def lengths_figure(auto: dict) -> go.Figure:
    """gamma auto's rounds by drafted tokens beside the same rounds by accepted tokens (0..the cap)."""
    drafted, accepted = auto["drafted_length_histogram"], auto["acceptance_length_histogram"]
    x = list(range(max(len(drafted), len(accepted))))
    data = [{"type": "bar", "x": x, "y": drafted, "name": "rounds by drafted tokens", "marker": {"color": TARGET_COLOUR}},
            {"type": "bar", "x": x, "y": accepted, "name": "rounds by accepted tokens", "marker": {"color": ACCEPT_COLOUR}}]
    layout = base_layout("γ auto: where drafting stopped, and how much of it was kept", 320, barmode="group",
                         xaxis={"title": {"text": "tokens in the round"}, "dtick": 1}, yaxis={"title": {"text": "rounds"}})
    return plain_figure(data, layout)


def auto_section(auto: dict | None) -> str:
    """gamma auto's runs: its speed-up beside the best fixed γ's, and its drafted lengths beside its accepted ones."""
    if not auto or not auto.get("steps"):
        return ""
    over = f" ({auto['over_best_fixed']:.2f} of the best fixed γ's)" if auto.get("over_best_fixed") else ""
    speed = f"×{auto['speedup']:.2f}{over}" if auto.get("speedup") is not None else "not timed"
    return ("<h2 id='gamma-auto'>γ auto: a draft length that adapts</h2>"
            f"<p>{auto['steps']} rounds, {auto['draft_calls'] / auto['steps']:.2f} drafted and "
            f"{auto['accepted'] / auto['steps']:.2f} accepted a round, α {auto['acceptance_rate']:.3f}: {speed}. "
            "Each round drafted until the draft's own confidence said the next token was unlikely to be kept at this "
            "pair's measured costs (or the cap).</p>" + figure_div(lengths_figure(auto), "drafted-lengths"))


def whatif_section(result: dict | None) -> str:
    if not result:
        return ""
    from .whatif_figures import whatif_figure

    best, (h0, h1), drafting = result["best"], result["host_cost"], result.get("drafting")
    drafts = f"d(γ) = {drafting[0]:.3f} + {drafting[1]:.4f}·γ" if drafting else "γc"
    return ("<h2>What if: other γ from this run's per-position curve</h2>"
            f"<p>From {html.escape(result['curve_source'])} at c {result['cost_ratio_c']:.3f}: expected acceptance "
            "length 1 + a₁ + … + a_γ (a_i: rounds accepting position i / rounds; beyond the measured positions the "
            f"last conditional rate continues) over a round's cost in target-only steps, {drafts} + f·V(γ + 1) + h(γ) "
            f"(Leviathan et al. 2023, Eq. 1, with a per-position curve in place of one α): V(n) "
            f"{html.escape(result.get('verify_cost_source', ''))}; f {result['forward_share']:.3f} and h(γ) = "
            f"{h0:.3f} + {h1:.4f}·γ ({html.escape(result.get('round_cost_source', ''))}). Best: γ {best['gamma']} at "
            f"×{best['speedup']:.2f} (acceptance length {best['acceptance_length']:.2f}); Thm 3.8's limit, where a "
            f"verify costs one forward (V = 1, f = 1, h = 0), ×{best['speedup_thm38']:.2f}.</p>"
            + figure_div(whatif_figure(result), "whatif"))


def report_html(summary: dict, panels: list[tuple[str, list]]) -> str:
    """The report of a measured pair: answer, speed by gamma, per-prompt panels, rejections, tables."""
    s, best, analysis = summary["settings"], summary["best_gamma"], summary["rejection_analysis"]
    head = (f"<h1>specviz report: {html.escape(summary['pair']['name'])}</h1>"
            f"<p class='muted'>γ ∈ {s['gammas']}, T = {s['temperature']}, top-k {s['top_k'] or 'off'}, top-p "
            f"{s['top_p'] or 'off'}, KL budget {s['kl_budget']}; {s['prompts']} prompts × {s['runs']} runs, up to "
            f"{s['max_new_tokens']} new tokens; speculative and target-only alternately, same prompts and seeds.</p>")
    answer = f"<div class='answer' id='diagnosis'><b>Diagnosis.</b> {html.escape(analysis['diagnosis'])}</div>"
    if best.get("measured") is not None:
        predicted = (f"with the measured verify costs and the round's host work the prediction is γ {best['predicted']} "
                     f"(×{best['predicted_speedup']:.2f}); " if best.get("predicted") else "")
        ties = best.get("measured_ties")
        tied = (f" (γ {', '.join(map(str, ties))} within one standard error: a tie a rerun may turn either way)"
                if ties else "")
        answer += (f"<p id='best-gamma'><b>Best γ {best['measured']}</b>: ×{best['speedup']:.2f} ± "
                   f"{best['speedup_stderr'] or 0:.2f} measured{tied}; {predicted}Thm 3.8, where a verify costs one "
                   f"forward, predicts γ {best['thm38']} (×{best['thm38_speedup']:.2f}).</p>")
    body = (head + answer + figure_div(speedup_figure(summary["by_gamma"], best), "speedup-by-gamma")
            + gamma_table(summary["by_gamma"]) + auto_section(summary.get("gamma_auto"))
            + "<h2>Each prompt</h2>" + figure_div(prompt_panels_figure(panels), "prompt-panels")
            + prompt_table(summary["prompts"])
            + "<h2>Where and why it rejects</h2>" + figure_div(rejection_figure(analysis), "rejections")
            + "<h3>Most rejected tokens</h3>" + most_rejected_table(analysis)
            + whatif_section(summary.get("whatif"))
            + "<h2>Per request</h2>" + figure_div(per_request_figure(summary["by_gamma"]), "per-request-histogram")
            + forms_table(summary["by_gamma"])
            + (f"<p id='ranking-note'>{html.escape(summary['ranking_note'])}</p>" if summary.get("ranking_note") else "")
            + "<h2>Which acceptance? Definitions</h2>" + definitions_list(summary.get("definitions", {}))
            + conventions_table(summary.get("conventions", [])))
    return page(f"specviz report: {summary['pair']['name']}", body)
