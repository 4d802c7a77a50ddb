"""One step's full distributions: p and q at each drafted position, u against the accept chance, the correction.

Built from a StepTrace only. Draft bars are hatched, the drafted token is starred and marked at its
own bar, verdicts are written as words and symbols (see palette.py).
"""
from __future__ import annotations

import plotly.graph_objects as go

from ..core.notation import label, letters, num, show
from ..core.trace import StepTrace
from .i18n import tr
from .palette import (
    ACCEPT_COLOUR,
    BONUS_COLOUR,
    DRAFT_COLOUR,
    FINAL_COLOUR,
    MUTED,
    OVERLAP_COLOUR,
    REJECT_COLOUR,
    TARGET_COLOUR,
)
from .plotting import LOG_FLOOR, PROB_AXIS, axis_refs, base_layout, floor, plain_figure, shown, unique


def pq_figure(trace: StepTrace, notation: str = "leviathan", lang: str = "en") -> go.Figure:
    """2. Verify: target and draft bars over each drafted position's top tokens, on one log axis (words in `lang`)."""
    t, d = letters(notation)
    n = len(trace.positions)
    gap = 0.45 / n if n > 1 else 0.0
    height = (1 - gap * (n - 1)) / n if n else 1.0  # n = 0: a lookup round that found nothing to copy
    data, layout_axes, notes = [], {}, []
    for i, pos in enumerate(trace.positions):
        x_ref, y_ref = axis_refs(i)
        top = 1 - i * (height + gap)
        layout_axes["xaxis" + x_ref[1:]] = {"anchor": y_ref, "domain": [0, 1], "tickfont": {"size": 12}, "type": "category"}
        layout_axes["yaxis" + y_ref[1:]] = {"anchor": x_ref, "domain": [max(top - height, 0), top], **PROB_AXIS}
        ratio = pos.target_prob / pos.draft_prob if pos.draft_prob > 0 else float("inf")
        verdict = tr(lang, f"verdict.{pos.verdict}") if pos.verdict != "unexamined" else tr(lang, "fig.not_examined")
        notes.append({"text": tr(lang, "fig.pq_note", n=pos.index + 1, token=label(pos.draft_text, 12), t=t, d=d,
                                 ratio=f"{ratio:.2f}", verdict=verdict, po=num(pos.target_other), qo=num(pos.draft_other)),
                      "x": 0, "y": top, "xref": "paper", "yref": "paper", "xanchor": "left", "yanchor": "bottom",
                      "showarrow": False, "font": {"size": 12}})
        keep = shown(pos.candidates, pos.draft_token, [lambda c: c.target_prob, lambda c: c.draft_prob])
        cands = [pos.candidates[j] for j in keep]
        labels = unique([("★" if c.id == pos.draft_token else "") + label(c.text) for c in cands])
        axes = {"xaxis": x_ref, "yaxis": y_ref, "showlegend": i == 0}
        drafted = next(j for j, c in enumerate(cands) if c.id == pos.draft_token)
        colour = ACCEPT_COLOUR if pos.verdict == "accepted" else REJECT_COLOUR if pos.verdict == "rejected" else MUTED
        hover = [f"{show(c.text)}: {t} = {num(c.target_prob)}, {d} = {num(c.draft_prob)}" for c in cands]
        data += [
            {"type": "bar", "x": labels, "y": floor([c.target_prob for c in cands]), "name": tr(lang, "fig.target_x", t=t),
             "marker": {"color": TARGET_COLOUR}, "offsetgroup": "t", "legendgroup": "t", "hovertext": hover,
             "hoverinfo": "text", **axes},
            {"type": "bar", "x": labels, "y": floor([c.draft_prob for c in cands]), "name": tr(lang, "fig.draft_x", d=d),
             "marker": {"color": "white", "line": {"color": DRAFT_COLOUR, "width": 2},
                        "pattern": {"shape": "/", "fgcolor": DRAFT_COLOUR, "solidity": 0.5}},
             "offsetgroup": "d", "legendgroup": "d", "hovertext": hover, "hoverinfo": "text", **axes},
            {"type": "scatter", "x": [labels[drafted]], "y": [max(pos.target_prob, pos.draft_prob, LOG_FLOOR) * 1.5],
             "mode": "markers", "name": tr(lang, "fig.drafted_marker"), "legendgroup": "x",
             "marker": {"symbol": "triangle-down", "size": 13, "color": colour}, **axes},
        ]
    return plain_figure(data, base_layout(tr(lang, "fig.pq_title", t=t, d=d), 150 + 200 * n,
                                 annotations=notes, barmode="group", **layout_axes))


def uniform_figure(trace: StepTrace, notation: str = "leviathan", lang: str = "en") -> go.Figure:
    """The draw u ~ U(0, 1) on a line, against each examined position's accept chance (words in `lang`)."""
    t, d = letters(notation)
    rule = tr(lang, "fig.rule_mentored") if trace.kl_budget > 0 else f"min(1, {t}/{d})"
    if trace.greedy:
        rule = tr(lang, "fig.rule_greedy", t=t, d=d)
    data, notes = [], []
    for pos in trace.positions:
        y = f"{pos.index + 1} “{label(pos.draft_text)}”"
        a, first = pos.accept_prob, pos.index == 0
        if pos.uniform is None:  # never examined: an earlier position was rejected
            data.append({"type": "bar", "y": [y], "x": [1], "base": 0, "orientation": "h", "width": 0.5,
                         "marker": {"color": "#d0d0d0"}, "name": tr(lang, "fig.not_examined"), "showlegend": False})
            notes.append({"y": y, "x": 0.5, "text": tr(lang, "fig.not_examined_note"), "showarrow": False,
                          "font": {"color": "#333"}})
            continue
        symbol = "✓" if pos.verdict == "accepted" else "✗"
        data += [
            {"type": "bar", "y": [y], "x": [a], "base": 0, "orientation": "h", "width": 0.5,
             "marker": {"color": ACCEPT_COLOUR}, "name": tr(lang, "fig.accept_zone"), "legendgroup": "acc", "showlegend": first},
            {"type": "bar", "y": [y], "x": [1 - a], "base": a, "orientation": "h", "width": 0.5,
             "marker": {"color": "white", "line": {"color": REJECT_COLOUR, "width": 2},
                        "pattern": {"shape": "x", "fgcolor": REJECT_COLOUR, "solidity": 0.4}},
             "name": tr(lang, "fig.reject_zone"), "legendgroup": "rej", "showlegend": first},
            {"type": "scatter", "y": [y], "x": [pos.uniform], "mode": "markers", "name": tr(lang, "fig.uniform_u"),
             "legendgroup": "u", "marker": {"symbol": "diamond", "size": 15, "color": OVERLAP_COLOUR,
                                            "line": {"color": "white", "width": 1}}, "showlegend": first},
        ]
        notes.append({"y": y, "x": 1.0, "xanchor": "left", "text": f" u = {num(pos.uniform)} {symbol} {num(a)}",
                      "showarrow": False, "font": {"size": 12}})
    layout = base_layout(tr(lang, "fig.uniform_title", rule=rule), 150 + 52 * len(trace.positions),
                     annotations=notes, xaxis={"range": [0, 1], "title": {"text": tr(lang, "fig.uniform_axis")}},
                     yaxis={"autorange": "reversed", "automargin": True})
    layout["margin"]["r"] = 120  # room for the "u = … ✓ …" notes right of the track
    return plain_figure(data, layout)


def residual_figure(trace: StepTrace, notation: str = "leviathan", lang: str = "en") -> go.Figure:
    """3. Correct: the residual norm(max(0, p - q)) (or mentored s) at the first rejection, or the bonus (words in `lang`)."""
    t, d = letters(notation)
    c = trace.correction
    lossy = trace.kl_budget > 0 and c.kind == "resampled"
    keep = shown(c.candidates, c.token, [lambda x: x.final_prob] + ([] if c.kind == "bonus" else
                                                                      [lambda x: x.target_prob, lambda x: x.draft_prob]))
    cands = [c.candidates[j] for j in keep]
    labels = unique([("★" if x.id == c.token else "") + label(x.text) for x in cands])
    data = []
    if c.kind == "resampled":
        dist = "mentored s(x)" if lossy else f"norm(max(0, {t} − {d}))"
        title = tr(lang, "fig.residual_title", pos=c.position + 1, dist=dist)
        data += [
            {"type": "bar", "x": labels, "y": floor([x.target_prob for x in cands]), "name": tr(lang, "fig.target_x", t=t),
             "marker": {"color": TARGET_COLOUR}, "offsetgroup": "t"},
            {"type": "bar", "x": labels, "y": floor([x.draft_prob for x in cands]), "name": tr(lang, "fig.draft_x", d=d),
             "marker": {"color": "white", "line": {"color": DRAFT_COLOUR, "width": 2},
                        "pattern": {"shape": "/", "fgcolor": DRAFT_COLOUR, "solidity": 0.5}}, "offsetgroup": "d"},
        ]
        if lossy:
            residual = dict(zip((x.id for x in c.candidates), c.residual_probs))
            data.append({"type": "bar", "x": labels, "y": floor([residual[x.id] for x in cands]),
                         "name": tr(lang, "fig.exact_residual", t=t, d=d), "offsetgroup": "r",
                         "marker": {"color": "white", "line": {"color": MUTED, "width": 2},
                                    "pattern": {"shape": ".", "fgcolor": MUTED}}})
    else:
        dist = tr(lang, "fig.next_dist", t=t)
        title = tr(lang, "fig.bonus_title", g=trace.gamma, dist=dist)
    colour = FINAL_COLOUR if c.kind == "resampled" else BONUS_COLOUR
    chosen = next(j for j, x in enumerate(cands) if x.id == c.token)
    data += [
        {"type": "bar", "x": labels, "y": floor([x.final_prob for x in cands]), "name": dist, "offsetgroup": "f",
         "marker": {"color": colour}},
        {"type": "scatter", "x": [labels[chosen]], "y": [max(cands[chosen].final_prob, LOG_FLOOR) * 1.6],
         "mode": "markers", "marker": {"symbol": "star", "size": 15, "color": OVERLAP_COLOUR},
         "name": tr(lang, f"fig.chosen_{c.kind}", token=label(c.text, 12))},
    ]
    title += tr(lang, "fig.other_tokens", x=num(c.final_other))
    return plain_figure(data, base_layout(title, 360, yaxis=PROB_AXIS, xaxis={"type": "category"}, barmode="group"))
