"""The playground's multi-draft figures: the Monte Carlo histogram of one k-candidate level against p,
and the chance one level accepts a candidate as k grows."""
from __future__ import annotations

import plotly.graph_objects as go

from ..core.notation import letters
from .palette import ACCEPT_COLOUR, DRAFT_COLOUR, REJECT_COLOUR, TARGET_COLOUR
from .playground_figures import histogram_figure
from .plotting import base_layout, plain_figure

DRAFT_VARIANT_STYLE = {
    "exact": ("exact: every sample a try, p → residual after each rejection", ACCEPT_COLOUR, ""),
    "merged": ("shortcut: identical candidates merged into one try", REJECT_COLOUR, "x"),
}


def drafts_histogram(results: list[dict], tokens: list[str], notation: str = "leviathan") -> go.Figure:
    t, _ = letters(notation)
    k, n = (results[0]["drafts"], results[0]["samples"]) if results else (0, 0)
    return histogram_figure(results, tokens, notation, DRAFT_VARIANT_STYLE,
                            f"k = {k} drafts, {n:,} rounds per rule: the first emitted token against {t} "
                            f"(small p-value = biased)")


def acceptance_figure(curve: dict, k: int, measured: float | None = None, notation: str = "leviathan") -> go.Figure:
    t, d = letters(notation)
    data = [{"type": "scatter", "x": curve["drafts"], "y": curve["acceptance"], "mode": "lines+markers",
             "name": f"P(a level accepts) = 1 − Π_j TV({t}_j, {d})", "marker": {"color": TARGET_COLOUR}},
            {"type": "scatter", "x": [1, curve["drafts"][-1]], "y": [curve["one_minus_tv"]] * 2, "mode": "lines",
             "name": f"1 − TV({t}, {d}): one draft", "line": {"color": DRAFT_COLOUR, "dash": "dash"}}]
    if measured is not None:
        data.append({"type": "scatter", "x": [k], "y": [measured], "mode": "markers", "name": f"measured at k = {k}",
                     "marker": {"symbol": "x", "size": 12, "color": "#000"}})
    return plain_figure(data, base_layout("One level's acceptance as k grows (closed form; residuals do not depend on "
                                          "which token was rejected)", 340,
                                          xaxis={"title": {"text": "k drafts"}, "dtick": 1},
                                          yaxis={"range": [0, 1.02], "title": {"text": "acceptance"}}))
