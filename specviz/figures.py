"""Plotly figures and plain-language narration, built from StepTrace records only.

Colours follow the Okabe-Ito palette (safe for colour-blind viewers), and every distinction
also has a second cue: draft bars are hatched, the drafted token carries a marker and a bold
label, verdicts are written as words and symbols.
"""
from __future__ import annotations

import html

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from .trace import StepTrace

TARGET_COLOUR, DRAFT_COLOUR, OVERLAP_COLOUR = "#0072B2", "#E69F00", "#000000"
ACCEPT_COLOUR, REJECT_COLOUR, FINAL_COLOUR, BONUS_COLOUR = "#009E73", "#D55E00", "#CC79A7", "#56B4E9"

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


def _layout(fig: go.Figure, title: str, height: int) -> go.Figure:
    fig.update_layout(title=dict(text=title, x=0.01, font=dict(size=15)), height=height, barmode="overlay",
                      margin=dict(l=50, r=20, t=60, b=30), template="plotly_white",
                      legend=dict(orientation="h", yanchor="bottom", y=1.0, xanchor="right", x=1.0),
                      font=dict(size=13))
    return fig


def empty_figure(message: str) -> go.Figure:
    fig = go.Figure()
    fig.add_annotation(text=message, x=0.5, y=0.5, xref="paper", yref="paper", showarrow=False, font=dict(size=14))
    fig.update_xaxes(visible=False)
    fig.update_yaxes(visible=False)
    return _layout(fig, "", 220)


def pq_figure(trace: StepTrace, notation: str = "leviathan") -> go.Figure:
    """2. Verify: target and draft bars over each drafted position's top tokens plus 'other'."""
    t, d = letters(notation)
    n = len(trace.positions)
    titles = []
    for pos in trace.positions:
        ratio = pos.target_prob / pos.draft_prob if pos.draft_prob > 0 else float("inf")
        titles.append(f"position {pos.index + 1}: drafted “{show(pos.draft_text)}”   {t}/{d} = {ratio:.2f}   "
                      f"overlap Σmin({t},{d}) = {pos.overlap:.2f}   → {pos.verdict}")
    fig = make_subplots(rows=n, cols=1, subplot_titles=titles, vertical_spacing=min(0.25 / max(n, 1), 0.12))
    for row, pos in enumerate(trace.positions, start=1):
        labels = [("★ " if c.id == pos.draft_token else "") + show(c.text) for c in pos.candidates] + ["other"]
        labels = _unique(labels)
        target = [c.target_prob for c in pos.candidates] + [pos.target_other]
        draft = [c.draft_prob for c in pos.candidates] + [pos.draft_other]
        overlap = [min(a, b) for a, b in zip(target, draft)]
        first = row == 1
        fig.add_bar(x=labels, y=target, name=f"target {t}(x)", marker_color=TARGET_COLOUR, opacity=0.55,
                    offsetgroup="t", legendgroup="t", showlegend=first, row=row, col=1)
        fig.add_bar(x=labels, y=draft, name=f"draft {d}(x)", marker=dict(color=DRAFT_COLOUR, pattern_shape="/"),
                    opacity=0.55, offsetgroup="d", legendgroup="d", showlegend=first, row=row, col=1)
        fig.add_scatter(x=labels, y=overlap, mode="markers", name=f"overlap min({t},{d})",
                        marker=dict(symbol="line-ew-open", size=22, color=OVERLAP_COLOUR, line=dict(width=3)),
                        legendgroup="o", showlegend=first, row=row, col=1)
        fig.add_scatter(x=[labels[_index_of(pos.candidates, pos.draft_token)]], y=[max(pos.target_prob, pos.draft_prob)],
                        mode="markers+text", text=["drafted"], textposition="top center",
                        marker=dict(symbol="triangle-down", size=12, color=ACCEPT_COLOUR if pos.verdict == "accepted" else REJECT_COLOUR),
                        name="drafted token", legendgroup="x", showlegend=first, row=row, col=1)
        fig.update_yaxes(range=[0, 1.08 * max(max(target), max(draft), 0.05) + 0.05], row=row, col=1)
    return _layout(fig, f"2. Verify — target {t} vs draft {d} at each drafted position", 150 + 210 * n)


def uniform_figure(trace: StepTrace, notation: str = "leviathan") -> go.Figure:
    """The draw r ~ U(0, 1) on a line, against the acceptance threshold min(1, p/q)."""
    t, d = letters(notation)
    fig = go.Figure()
    for pos in trace.positions:
        y = f"pos {pos.index + 1} “{show(pos.draft_text)}”"
        a = pos.accept_prob
        if pos.uniform is None:  # never examined: an earlier position was rejected
            fig.add_bar(y=[y], x=[1], base=0, orientation="h", marker=dict(color="#bbbbbb"), opacity=0.4,
                        name="not examined", legendgroup="none", showlegend=False, width=0.5)
            fig.add_annotation(y=y, x=0.5, text="not examined (an earlier token was rejected)", showarrow=False,
                               font=dict(color="#444"))
            continue
        fig.add_bar(y=[y], x=[a], base=0, orientation="h", marker=dict(color=ACCEPT_COLOUR), opacity=0.45,
                    name="accept zone r < threshold", legendgroup="acc", showlegend=pos.index == 0, width=0.5)
        fig.add_bar(y=[y], x=[1 - a], base=a, orientation="h", marker=dict(color=REJECT_COLOUR, pattern_shape="x"),
                    opacity=0.35, name="reject zone", legendgroup="rej", showlegend=pos.index == 0, width=0.5)
        symbol = "✓" if pos.verdict == "accepted" else "✗"
        fig.add_scatter(y=[y], x=[pos.uniform], mode="markers+text", textposition="top center",
                        text=[f"r = {num(pos.uniform)} {symbol} threshold {num(a)}"], name="uniform draw r",
                        legendgroup="r", marker=dict(symbol="diamond", size=16, color=OVERLAP_COLOUR),
                        showlegend=pos.index == 0)
    rule = "mentored r(x)" if trace.kl_budget > 0 else f"min(1, {t}/{d})"
    fig.update_xaxes(range=[0, 1], title=f"accept when r < threshold = {rule}")
    fig.update_yaxes(autorange="reversed")
    return _layout(fig, f"2. Verify — uniform draw r against the threshold {rule}", 140 + 60 * len(trace.positions))


def residual_figure(trace: StepTrace, notation: str = "leviathan") -> go.Figure:
    """3. Correct: the residual norm(max(0, p - q)) (or mentored s) at the first rejection, or the bonus."""
    t, d = letters(notation)
    c = trace.correction
    labels = _unique([("★ " if x.id == c.token else "") + show(x.text) for x in c.candidates] + ["other"])
    final = [x.final_prob for x in c.candidates] + [c.final_other]
    fig = go.Figure()
    if c.kind == "resampled":
        dist = "mentored s(x)" if trace.kl_budget > 0 else f"norm(max(0, {t} − {d}))"
        title = f"3. Correct — rejected at position {c.position + 1}: resample from {dist}"
        fig.add_bar(x=labels[:-1], y=[x.target_prob for x in c.candidates], name=f"target {t}(x)",
                    marker_color=TARGET_COLOUR, opacity=0.25, offsetgroup="t")
        fig.add_bar(x=labels[:-1], y=[x.draft_prob for x in c.candidates], name=f"draft {d}(x)",
                    marker=dict(color=DRAFT_COLOUR, pattern_shape="/"), opacity=0.25, offsetgroup="d")
    else:
        dist = f"the target's next distribution {t}"
        title = f"3. Correct — all {trace.gamma} drafts accepted: bonus token from {dist}"
    fig.add_bar(x=labels, y=final, name=dist, marker=dict(color=FINAL_COLOUR if c.kind == "resampled" else BONUS_COLOUR,
                                                          line=dict(color="#333", width=1)), offsetgroup="f")
    fig.add_scatter(x=[labels[_index_of(c.candidates, c.token)]], y=[max(final[:-1] or [0])], mode="markers+text",
                    text=[f"{c.kind}: “{show(c.text)}”"], textposition="top center",
                    marker=dict(symbol="star", size=16, color=OVERLAP_COLOUR), name=f"{c.kind} token")
    return _layout(fig, title, 360)


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
