"""Plotly figures and plain-language narration, built from StepTrace records only.

Colours follow the Okabe-Ito palette (safe for colour-blind viewers), and every distinction
also has a second cue: draft bars are hatched, the drafted token carries a marker and a bold
label, verdicts are written as words and symbols.
"""
from __future__ import annotations

import html

import plotly.graph_objects as go

from .trace import StepTrace

TARGET_COLOUR, DRAFT_COLOUR, OVERLAP_COLOUR = "#0072B2", "#E69F00", "#000000"
ACCEPT_COLOUR, REJECT_COLOUR, FINAL_COLOUR, BONUS_COLOUR = "#009E73", "#D55E00", "#CC79A7", "#56B4E9"

# A small white theme: plotly's full named templates would ship ~6 kB with every figure.
_GRID = {"gridcolor": "#E5ECF6", "zerolinecolor": "#C8D4E3", "linecolor": "#C8D4E3", "automargin": True}
TEMPLATE = {"layout": {"plot_bgcolor": "white", "paper_bgcolor": "white", "xaxis": _GRID, "yaxis": _GRID,
                       "font": {"color": "#2a3f5f"}}}

# name -> (target letter, draft letter, description)
NOTATIONS = {
    "leviathan": ("p", "q", "Leviathan et al. / seed 000: p = target, q = draft"),
    "deepmind": ("q", "p", "seed 003 (mentored decoding): p = draft, q = target"),
    "seed004": ("φ", "θ", "seed 004: θ = draft, φ = target"),
}


def letters(notation: str) -> tuple[str, str]:
    if notation not in NOTATIONS:
        raise ValueError(f"unknown notation {notation!r}; choose one of {sorted(NOTATIONS)}")
    return NOTATIONS[notation][:2]


def num(x: float) -> str:
    """A probability readable at any scale: 0.42, 0.031, 2.1e-05."""
    return f"{x:.2f}" if x >= 0.095 or x == 0 else f"{x:.2g}" if x >= 1e-3 else f"{x:.1e}"


def show(text: str) -> str:
    """A token's text made visible: spaces and newlines as symbols."""
    return text.replace(" ", "␣").replace("\n", "⏎").replace("\t", "⇥") or "∅"


def _layout(title: str, height: int, **extra) -> dict:
    top, bottom = 100, 40
    legend_y = 1 + 28 / (height - top - bottom)  # a line above the plot area, below the title
    return {"title": {"text": title, "x": 0.01, "y": 1 - 12 / height, "yanchor": "top", "font": {"size": 15}},
            "height": height, "barmode": "overlay", "margin": {"l": 50, "r": 20, "t": top, "b": bottom},
            "template": TEMPLATE, "font": {"size": 13},
            "legend": {"orientation": "h", "yanchor": "bottom", "y": legend_y, "xanchor": "left", "x": 0}, **extra}


def _figure(data: list[dict], layout: dict) -> go.Figure:
    """A figure from plain dicts: plotly's per-property validation would cost more than the engine step."""
    return go.Figure({"data": data, "layout": layout}, _validate=False)


def empty_figure(message: str) -> go.Figure:
    note = {"text": message, "x": 0.5, "y": 0.5, "xref": "paper", "yref": "paper", "showarrow": False, "font": {"size": 14}}
    return _figure([], _layout("", 220, annotations=[note], xaxis={"visible": False}, yaxis={"visible": False}))


def _axis(i: int) -> tuple[str, str]:
    """Trace references and layout keys of subplot i (0-based): ('x2', 'xaxis2') for i = 1."""
    return ("x" if i == 0 else f"x{i + 1}"), ("y" if i == 0 else f"y{i + 1}")


def pq_figure(trace: StepTrace, notation: str = "leviathan") -> go.Figure:
    """2. Verify: target and draft bars over each drafted position's top tokens plus 'other'."""
    t, d = letters(notation)
    n = len(trace.positions)
    gap = 0.35 / n if n > 1 else 0.0
    height = (1 - gap * (n - 1)) / n
    data, layout_axes, notes = [], {}, []
    for i, pos in enumerate(trace.positions):
        x_ref, y_ref = _axis(i)
        top = 1 - i * (height + gap)
        layout_axes["xaxis" + x_ref[1:]] = {"anchor": y_ref, "domain": [0, 1], "tickfont": {"size": 11}}
        layout_axes["yaxis" + y_ref[1:]] = {"anchor": x_ref, "domain": [max(top - height, 0), top], "rangemode": "tozero"}
        ratio = pos.target_prob / pos.draft_prob if pos.draft_prob > 0 else float("inf")
        notes.append({"text": f"<b>position {pos.index + 1}</b>: drafted “{show(pos.draft_text)}”   {t}/{d} = {ratio:.2f}   "
                              f"overlap Σmin({t},{d}) = {pos.overlap:.2f}   → <b>{pos.verdict}</b>",
                      "x": 0, "y": top, "xref": "paper", "yref": "paper", "xanchor": "left", "yanchor": "bottom",
                      "showarrow": False, "font": {"size": 13}})
        labels = _unique([("★ " if c.id == pos.draft_token else "") + show(c.text) for c in pos.candidates] + ["other"])
        target = [c.target_prob for c in pos.candidates] + [pos.target_other]
        draft = [c.draft_prob for c in pos.candidates] + [pos.draft_other]
        overlap = [min(a, b) for a, b in zip(target, draft)]
        axes = {"xaxis": x_ref, "yaxis": y_ref, "showlegend": i == 0}
        drafted = labels[_index_of(pos.candidates, pos.draft_token)]
        colour = ACCEPT_COLOUR if pos.verdict == "accepted" else REJECT_COLOUR if pos.verdict == "rejected" else "#777"
        data += [
            {"type": "bar", "x": labels, "y": target, "name": f"target {t}(x)", "marker": {"color": TARGET_COLOUR},
             "opacity": 0.55, "offsetgroup": "t", "legendgroup": "t", **axes},
            {"type": "bar", "x": labels, "y": draft, "name": f"draft {d}(x)", "opacity": 0.55, "offsetgroup": "d",
             "marker": {"color": DRAFT_COLOUR, "pattern": {"shape": "/"}}, "legendgroup": "d", **axes},
            {"type": "scatter", "x": labels, "y": overlap, "mode": "markers", "name": f"overlap min({t},{d})",
             "marker": {"symbol": "line-ew-open", "size": 22, "color": OVERLAP_COLOUR, "line": {"width": 3}},
             "legendgroup": "o", **axes},
            {"type": "scatter", "x": [drafted], "y": [max(pos.target_prob, pos.draft_prob)], "mode": "markers+text",
             "text": ["drafted"], "textposition": "top center", "name": "drafted token", "legendgroup": "x",
             "marker": {"symbol": "triangle-down", "size": 12, "color": colour}, **axes},
        ]
    return _figure(data, _layout(f"2. Verify — target {t} vs draft {d} at each drafted position", 150 + 230 * n,
                                 annotations=notes, **layout_axes))


def uniform_figure(trace: StepTrace, notation: str = "leviathan") -> go.Figure:
    """The draw r ~ U(0, 1) on a line, against the acceptance threshold min(1, p/q)."""
    t, d = letters(notation)
    rule = "mentored r(x)" if trace.kl_budget > 0 else f"min(1, {t}/{d})"
    data, notes = [], []
    for pos in trace.positions:
        y = f"pos {pos.index + 1} “{show(pos.draft_text)}”"
        a, first = pos.accept_prob, pos.index == 0
        if pos.uniform is None:  # never examined: an earlier position was rejected
            data.append({"type": "bar", "y": [y], "x": [1], "base": 0, "orientation": "h", "width": 0.5,
                         "marker": {"color": "#bbbbbb"}, "opacity": 0.4, "name": "not examined", "showlegend": False})
            notes.append({"y": y, "x": 0.5, "text": "not examined (an earlier token was rejected)", "showarrow": False,
                          "font": {"color": "#444"}})
            continue
        symbol = "✓" if pos.verdict == "accepted" else "✗"
        data += [
            {"type": "bar", "y": [y], "x": [a], "base": 0, "orientation": "h", "width": 0.5, "opacity": 0.45,
             "marker": {"color": ACCEPT_COLOUR}, "name": "accept zone r < threshold", "legendgroup": "acc", "showlegend": first},
            {"type": "bar", "y": [y], "x": [1 - a], "base": a, "orientation": "h", "width": 0.5, "opacity": 0.35,
             "marker": {"color": REJECT_COLOUR, "pattern": {"shape": "x"}}, "name": "reject zone", "legendgroup": "rej",
             "showlegend": first},
            {"type": "scatter", "y": [y], "x": [pos.uniform], "mode": "markers+text", "textposition": "top center",
             "text": [f"r = {num(pos.uniform)} {symbol} threshold {num(a)}"], "name": "uniform draw r", "legendgroup": "r",
             "marker": {"symbol": "diamond", "size": 16, "color": OVERLAP_COLOUR}, "showlegend": first},
        ]
    return _figure(data, _layout(f"2. Verify — uniform draw r against the threshold {rule}", 150 + 60 * len(trace.positions),
                                 annotations=notes, xaxis={"range": [0, 1], "title": {"text": f"accept when r < threshold = {rule}"}},
                                 yaxis={"autorange": "reversed"}))


def residual_figure(trace: StepTrace, notation: str = "leviathan") -> go.Figure:
    """3. Correct: the residual norm(max(0, p - q)) (or mentored s) at the first rejection, or the bonus."""
    t, d = letters(notation)
    c = trace.correction
    labels = _unique([("★ " if x.id == c.token else "") + show(x.text) for x in c.candidates] + ["other"])
    final = [x.final_prob for x in c.candidates] + [c.final_other]
    data = []
    if c.kind == "resampled":
        dist = "mentored s(x)" if trace.kl_budget > 0 else f"norm(max(0, {t} − {d}))"
        title = f"3. Correct — rejected at position {c.position + 1}: resample from {dist}"
        data += [
            {"type": "bar", "x": labels[:-1], "y": [x.target_prob for x in c.candidates], "name": f"target {t}(x)",
             "marker": {"color": TARGET_COLOUR}, "opacity": 0.25, "offsetgroup": "t"},
            {"type": "bar", "x": labels[:-1], "y": [x.draft_prob for x in c.candidates], "name": f"draft {d}(x)",
             "marker": {"color": DRAFT_COLOUR, "pattern": {"shape": "/"}}, "opacity": 0.25, "offsetgroup": "d"},
        ]
    else:
        dist = f"the target's next distribution {t}"
        title = f"3. Correct — all {trace.gamma} drafts accepted: bonus token from {dist}"
    colour = FINAL_COLOUR if c.kind == "resampled" else BONUS_COLOUR
    data += [
        {"type": "bar", "x": labels, "y": final, "name": dist, "offsetgroup": "f",
         "marker": {"color": colour, "line": {"color": "#333", "width": 1}}},
        {"type": "scatter", "x": [labels[_index_of(c.candidates, c.token)]], "y": [max(final[:-1] or [0])],
         "mode": "markers+text", "text": [f"{c.kind}: “{show(c.text)}”"], "textposition": "top center",
         "marker": {"symbol": "star", "size": 16, "color": OVERLAP_COLOUR}, "name": f"{c.kind} token"},
    ]
    return _figure(data, _layout(title, 380, yaxis={"rangemode": "tozero"}))


def history_figure(traces: list[StepTrace], notation: str = "leviathan") -> go.Figure:
    """The whole run: drafts accepted per step, and the mean overlap sum min(p, q) of the tested positions."""
    t, d = letters(notation)
    steps = [tr.step for tr in traces]
    overlap = [sum(p.overlap for p in tr.positions if p.uniform is not None) /
               max(1, sum(p.uniform is not None for p in tr.positions)) for tr in traces]
    kinds = [tr.correction.kind for tr in traces]
    data = [
        {"type": "bar", "x": steps, "y": [tr.n_accepted for tr in traces], "name": "drafts accepted",
         "marker": {"color": ACCEPT_COLOUR}, "opacity": 0.6},
        {"type": "scatter", "x": steps, "y": [tr.n_accepted + 0.5 for tr in traces], "mode": "markers",
         "marker": {"symbol": ["star" if k == "bonus" else "circle-open" for k in kinds], "size": 11,
                    "color": [BONUS_COLOUR if k == "bonus" else FINAL_COLOUR for k in kinds]},
         "name": "then: ★ bonus / ○ resampled"},
        {"type": "scatter", "x": steps, "y": overlap, "mode": "lines+markers", "yaxis": "y2",
         "name": f"mean overlap Σmin({t},{d}) of tested drafts", "line": {"color": OVERLAP_COLOUR, "dash": "dot"}},
    ]
    gamma = traces[-1].gamma if traces else 1
    return _figure(data, _layout("The run so far — accepted drafts per step (bars) and draft/target overlap (line)", 300,
                                 xaxis={"title": {"text": "step"}, "dtick": 1 if len(steps) <= 30 else None},
                                 yaxis={"range": [0, gamma + 1], "title": {"text": "accepted"}},
                                 yaxis2={"range": [0, 1.05], "overlaying": "y", "side": "right", "showgrid": False,
                                         "title": {"text": "overlap"}}))


def narration(trace: StepTrace, notation: str = "leviathan") -> str:
    """A plain-language account of the step, in the algorithm's order (Markdown)."""
    t, d = letters(notation)
    drafted = ", ".join(f"“{show(p.draft_text)}” ({d} = {num(p.draft_prob)})" for p in trace.positions)
    lines = [f"#### Step {trace.step}", f"**1. Draft:** the draft model proposed {trace.gamma} tokens: {drafted}.",
             "", "**2. Verify:** the target scored all of them in one forward pass."]
    rule = "mentored r" if trace.kl_budget > 0 else f"min(1, {t}/{d})"
    for p in trace.positions:
        if p.uniform is None:
            lines.append(f"- “{show(p.draft_text)}”: not examined, an earlier token was rejected.")
            continue
        cmp = "<" if p.verdict == "accepted" else "≥"
        lines.append(f"- “{show(p.draft_text)}”: the draft gave {d} = {num(p.draft_prob)}, the target gives {t} = "
                     f"{num(p.target_prob)}; accepted with probability {rule} = {num(p.accept_prob)}; "
                     f"r = {num(p.uniform)} {cmp} {num(p.accept_prob)}: **{p.verdict}**.")
    c = trace.correction
    lines.append("")
    if c.kind == "resampled":
        dist = "the mentored distribution s" if trace.kl_budget > 0 else f"the residual norm(max(0, {t} − {d}))"
        lines.append(f"**3. Correct:** position {c.position + 1} was rejected, so a replacement “{show(c.text)}” "
                     f"was drawn from {dist}, which puts mass only where the target wants more than the draft gave.")
    else:
        lines.append(f"**3. Correct:** every drafted token was accepted, so the target's distribution at the next "
                     f"position (already computed) gave a bonus token “{show(c.text)}” for free.")
    lines.append(f"\nThis step emitted **{len(trace.emitted)} token(s) for one target forward pass** "
                 f"({trace.n_accepted} accepted + 1 {c.kind}).")
    if trace.kl_budget > 0:
        lines.append(f"\n*Mentored decoding (KL budget {trace.kl_budget:g} nats): lossy, the output may differ "
                     f"from the target's distribution by up to that KL at each position.*")
    if trace.notice:
        lines.append(f"\n*Note: {trace.notice}.*")
    return "\n".join(lines)


CHIP_STYLE = {
    "accepted": ("✓", "#d9f2e9", ACCEPT_COLOUR, "solid", ""),
    "rejected": ("✗", "#fbe3d6", REJECT_COLOUR, "solid", "text-decoration: line-through; opacity: 0.75;"),
    "resampled": ("↻", "#f5e1ee", FINAL_COLOUR, "dashed", ""),
    "bonus": ("★", "#ddeffa", "#0072B2", "double", ""),
}


def chip(text: str, verdict: str, step: int | None) -> str:
    """A token chip; step=None makes a legend swatch (no data attributes, not clickable)."""
    symbol, bg, border, style, extra = CHIP_STYLE[verdict]
    attrs = (f'class="chip" data-verdict="{verdict}" data-step="{step}" title="step {step}: {verdict}"'
             if step is not None else f'class="legend-chip" title="{verdict}"')
    return (f'<span {attrs} '
            f'style="display:inline-block; margin:2px 1px; padding:1px 5px; border-radius:6px; cursor:pointer; '
            f'background:{bg}; border:2px {style} {border}; font-family:monospace; white-space:pre; {extra}">'
            f'<sup style="font-size:0.7em">{symbol}</sup>{html.escape(show(text))}</span>')


def timeline_html(prompt: str, traces: list[StepTrace], selected: int | None = None) -> str:
    """Prompt, then each step's accepted / rejected / resampled / bonus tokens as chips."""
    parts = [f'<span style="color:#666; white-space:pre-wrap">{html.escape(prompt)}</span>']
    for tr in traces:
        mark = "outline: 3px solid #444;" if tr.step == selected else ""
        inner = [chip(e.text, e.kind, tr.step) for e in tr.emitted[: tr.n_accepted]]
        inner += [chip(r.text, "rejected", tr.step) for r in tr.rejected]
        inner += [chip(e.text, e.kind, tr.step) for e in tr.emitted[tr.n_accepted:]]
        parts.append(f'<span class="step-group" data-step="{tr.step}" style="{mark} border-radius:6px">{"".join(inner)}</span>')
    legend = " ".join(chip(k, k, None) for k in CHIP_STYLE)
    return (f'<div style="line-height:2.0; font-size:15px">{"".join(parts)}</div>'
            f'<div class="legend" style="margin-top:8px; font-size:12px; color:#555">legend: {legend} '
            f'· click a chip to show its step</div>')


def _unique(labels: list[str]) -> list[str]:
    seen: dict[str, int] = {}
    out = []
    for label in labels:
        seen[label] = seen.get(label, 0) + 1
        out.append(label if seen[label] == 1 else f"{label} ({seen[label]})")
    return out


def _index_of(candidates, token_id: int) -> int:
    for i, c in enumerate(candidates):
        if c.id == token_id:
            return i
    return len(candidates)  # "other"
