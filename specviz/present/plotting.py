"""What every figure shares: plotly figures from plain dicts, one small theme, the probability log axis.

Probabilities are drawn on one log axis, 1e-3 to 1, in every panel: the accept test is the ratio
p/q, and on a log axis the gap between a token's two bars *is* log(p/q), while a drafted token of
probability 0.01 stays a visible bar instead of a sliver beside a 0.6 "other" mass.
"""
from __future__ import annotations

import plotly.graph_objects as go

from ..core.notation import label

LOG_FLOOR = 1e-3  # the log axis starts here; smaller probabilities sit on the floor with their value in the hover
PROB_AXIS = {"type": "log", "range": [-3, 0.05], "tickvals": [1e-3, 1e-2, 0.1, 1], "ticktext": ["0.001", "0.01", "0.1", "1"]}

# A small white theme: plotly's full named templates would ship ~6 kB with every figure.
_GRID = {"gridcolor": "#E5ECF6", "zerolinecolor": "#C8D4E3", "linecolor": "#C8D4E3", "automargin": True}
TEMPLATE = {"layout": {"plot_bgcolor": "white", "paper_bgcolor": "white", "xaxis": _GRID, "yaxis": _GRID,
                       "font": {"color": "#2a3f5f"}}}

def base_layout(title: str, height: int, **extra) -> dict:
    top, bottom = 100, 40
    legend_y = 1 + 28 / (height - top - bottom)  # a line above the plot area, below the title
    return {"title": {"text": title, "x": 0.01, "y": 1 - 12 / height, "yanchor": "top", "font": {"size": 15}},
            "height": height, "barmode": extra.pop("barmode", "overlay"), "margin": {"l": 50, "r": 20, "t": top, "b": bottom},
            "template": TEMPLATE, "font": {"size": 13},
            "legend": {"orientation": "h", "yanchor": "bottom", "y": legend_y, "xanchor": "left", "x": 0}, **extra}


def plain_figure(data: list[dict], layout: dict) -> go.Figure:
    """A figure from plain dicts: plotly's per-property validation would cost more than the engine step."""
    return go.Figure({"data": data, "layout": layout}, _validate=False)


def empty_figure(message: str) -> go.Figure:
    note = {"text": message, "x": 0.5, "y": 0.5, "xref": "paper", "yref": "paper", "showarrow": False, "font": {"size": 14}}
    return plain_figure([], base_layout("", 220, annotations=[note], xaxis={"visible": False}, yaxis={"visible": False}))


def axis_refs(i: int) -> tuple[str, str]:
    """Trace references and layout keys of subplot i (0-based): ('x2', 'xaxis2') for i = 1."""
    return ("x" if i == 0 else f"x{i + 1}"), ("y" if i == 0 else f"y{i + 1}")


def shown(candidates, must: int, values) -> list[int]:
    """Indices of the candidates worth a bar: any non-zero value among `values`, or the must-show token."""
    return [i for i, c in enumerate(candidates) if c.id == must or any(v(c) > 0 for v in values)]


def floor(values: list[float]) -> list[float]:
    return [max(v, LOG_FLOOR) for v in values]


def unique(labels: list[str]) -> list[str]:
    seen: dict[str, int] = {}
    out = []
    for text in labels:
        seen[text] = seen.get(text, 0) + 1
        out.append(text if seen[text] == 1 else f"{text} ({seen[text]})")
    return out


def token_labels(tokens: list[str], marks: list[str] | None = None) -> list[str]:
    labels = unique([label(t, 10) for t in tokens])
    return labels if marks is None else [f"{x} {m}".strip() for x, m in zip(labels, marks)]
