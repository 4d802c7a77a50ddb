"""The what-if table as a figure: expected speedup against gamma, one line per draft count k, the best starred,
and where the table priced each verify from a measured cost curve, Thm 3.8's limit (a verify costing one forward)
dotted beside the one-draft line."""
from __future__ import annotations

import plotly.graph_objects as go

from .i18n import tr
from .palette import ACCEPT_COLOUR, MUTED, OVERLAP_COLOUR, TARGET_COLOUR
from .plotting import base_layout, plain_figure

LINE_COLOURS = (TARGET_COLOUR, OVERLAP_COLOUR, ACCEPT_COLOUR, MUTED)


def whatif_figure(result: dict, title: str | None = None, lang: str = "en") -> go.Figure:
    """One line per k, the best row starred; the words in `lang` (the report's and the CLI's: English)."""
    rows, best = result["table"], result["best"]
    title = tr(lang, "wi.fig_title") if title is None else title
    data = []
    for i, k in enumerate(sorted({r["drafts"] for r in rows})):
        mine = sorted((r for r in rows if r["drafts"] == k), key=lambda r: r["gamma"])
        data.append({"type": "scatter", "x": [r["gamma"] for r in mine], "y": [round(r["speedup"], 4) for r in mine],
                     "mode": "lines+markers", "name": f"k = {k}", "line": {"color": LINE_COLOURS[i % len(LINE_COLOURS)]},
                     "customdata": [round(r["acceptance_length"], 3) for r in mine],
                     "hovertemplate": "γ %{x}: ×%{y:.2f}, " + tr(lang, "wi.fig_hover") + " %{customdata}<extra></extra>"})
    if result.get("verify_costs"):
        one = sorted((r for r in rows if r["drafts"] == min(r["drafts"] for r in rows)), key=lambda r: r["gamma"])
        data.append({"type": "scatter", "x": [r["gamma"] for r in one], "y": [round(r["speedup_thm38"], 4) for r in one],
                     "mode": "lines", "name": tr(lang, "wi.fig_thm38"), "line": {"color": MUTED, "dash": "dot"},
                     "hovertemplate": "γ %{x}: ×%{y:.2f}<extra></extra>"})
    data.append({"type": "scatter", "x": [best["gamma"]], "y": [round(best["speedup"], 4)], "mode": "markers+text",
                 "text": [tr(lang, "wi.fig_best", g=best["gamma"], k=best["drafts"])], "textposition": "top center",
                 "marker": {"symbol": "star", "size": 15, "color": ACCEPT_COLOUR}, "name": tr(lang, "wi.fig_best_name")})
    layout = base_layout(title, 360, xaxis={"title": {"text": "γ"}, "dtick": 1},
                         yaxis={"title": {"text": tr(lang, "wi.fig_y")},  # room above the star's label
                                "range": [0, 1.2 * max(max(max(r["speedup"], r.get("speedup_thm38", 0)) for r in rows),
                                                       1.0)]},
                         shapes=[{"type": "line", "xref": "paper", "x0": 0, "x1": 1, "y0": 1, "y1": 1,
                                  "line": {"color": MUTED, "width": 1, "dash": "dash"}}])
    return plain_figure(data, layout)
