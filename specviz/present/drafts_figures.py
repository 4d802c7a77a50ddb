"""The playground's multi-draft figures: the Monte Carlo histogram of one k-candidate level against p,
and the chance one level accepts a candidate as k grows."""
from __future__ import annotations

import plotly.graph_objects as go

from ..core.notation import letters
from .i18n import tr
from .palette import ACCEPT_COLOUR, DRAFT_COLOUR, REJECT_COLOUR, TARGET_COLOUR
from .playground_figures import histogram_figure
from .plotting import base_layout, plain_figure

DRAFT_VARIANT_STYLE = {  # variant -> (catalogue key of its name, colour, bar pattern)
    "exact": ("dvariant.exact", ACCEPT_COLOUR, ""),
    "merged": ("dvariant.merged", REJECT_COLOUR, "x"),
}


def drafts_histogram(results: list[dict], tokens: list[str], notation: str = "leviathan", lang: str = "en") -> go.Figure:
    t, _ = letters(notation)
    k, n = (results[0]["drafts"], results[0]["samples"]) if results else (0, 0)
    return histogram_figure(results, tokens, notation, DRAFT_VARIANT_STYLE,
                            tr(lang, "fig.dh_title", k=k, n=f"{n:,}", t=t), lang)


def acceptance_figure(curve: dict, k: int, measured: float | None = None, notation: str = "leviathan",
                      lang: str = "en") -> go.Figure:
    t, d = letters(notation)
    data = [{"type": "scatter", "x": curve["drafts"], "y": curve["acceptance"], "mode": "lines+markers",
             "name": tr(lang, "fig.da_curve", t=t, d=d), "marker": {"color": TARGET_COLOUR}},
            {"type": "scatter", "x": [1, curve["drafts"][-1]], "y": [curve["one_minus_tv"]] * 2, "mode": "lines",
             "name": tr(lang, "fig.da_one", t=t, d=d), "line": {"color": DRAFT_COLOUR, "dash": "dash"}}]
    if measured is not None:
        data.append({"type": "scatter", "x": [k], "y": [measured], "mode": "markers", "name": tr(lang, "fig.da_measured", k=k),
                     "marker": {"symbol": "x", "size": 12, "color": "#000"}})
    return plain_figure(data, base_layout(tr(lang, "fig.da_title"), 340,
                                          xaxis={"title": {"text": tr(lang, "fig.ax_k")}, "dtick": 1},
                                          yaxis={"range": [0, 1.02], "title": {"text": tr(lang, "fig.ax_acceptance")}}))
