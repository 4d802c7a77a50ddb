"""Plotly figures of the full distributions and of the run, built from StepTrace records only.

Colours are render.py's (Okabe-Ito hues at >= 3:1 contrast on white), and every distinction
also has a second cue: draft bars are hatched, the drafted token is starred and marked at its own
bar, verdicts are written as words and symbols.

Probabilities are drawn on one log axis, 1e-3 to 1, in every panel: the accept test is the ratio
p/q, and on a log axis the gap between a token's two bars *is* log(p/q), while a drafted token of
probability 0.01 stays a visible bar instead of a sliver beside a 0.6 "other" mass.
"""
from __future__ import annotations

import plotly.graph_objects as go

from .notation import label, letters, num, show
from .render import ACCEPT_COLOUR, BONUS_COLOUR, DRAFT_COLOUR, FINAL_COLOUR, MUTED, REJECT_COLOUR, TARGET_COLOUR
from .trace import StepTrace

OVERLAP_COLOUR = "#000000"
LOG_FLOOR = 1e-3  # the log axis starts here; smaller probabilities sit on the floor with their value in the hover
PROB_AXIS = {"type": "log", "range": [-3, 0.05], "tickvals": [1e-3, 1e-2, 0.1, 1], "ticktext": ["0.001", "0.01", "0.1", "1"]}

# A small white theme: plotly's full named templates would ship ~6 kB with every figure.
_GRID = {"gridcolor": "#E5ECF6", "zerolinecolor": "#C8D4E3", "linecolor": "#C8D4E3", "automargin": True}
TEMPLATE = {"layout": {"plot_bgcolor": "white", "paper_bgcolor": "white", "xaxis": _GRID, "yaxis": _GRID,
                       "font": {"color": "#2a3f5f"}}}

def _layout(title: str, height: int, **extra) -> dict:
    top, bottom = 100, 40
    legend_y = 1 + 28 / (height - top - bottom)  # a line above the plot area, below the title
    return {"title": {"text": title, "x": 0.01, "y": 1 - 12 / height, "yanchor": "top", "font": {"size": 15}},
            "height": height, "barmode": extra.pop("barmode", "overlay"), "margin": {"l": 50, "r": 20, "t": top, "b": bottom},
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


def _shown(candidates, must: int, values) -> list[int]:
    """Indices of the candidates worth a bar: any non-zero value among `values`, or the must-show token."""
    return [i for i, c in enumerate(candidates) if c.id == must or any(v(c) > 0 for v in values)]


def _floor(values: list[float]) -> list[float]:
    return [max(v, LOG_FLOOR) for v in values]


def pq_figure(trace: StepTrace, notation: str = "leviathan") -> go.Figure:
    """2. Verify: target and draft bars over each drafted position's top tokens, on one log axis."""
    t, d = letters(notation)
    n = len(trace.positions)
    gap = 0.45 / n if n > 1 else 0.0
    height = (1 - gap * (n - 1)) / n
    data, layout_axes, notes = [], {}, []
    for i, pos in enumerate(trace.positions):
        x_ref, y_ref = _axis(i)
        top = 1 - i * (height + gap)
        layout_axes["xaxis" + x_ref[1:]] = {"anchor": y_ref, "domain": [0, 1], "tickfont": {"size": 12}, "type": "category"}
        layout_axes["yaxis" + y_ref[1:]] = {"anchor": x_ref, "domain": [max(top - height, 0), top], **PROB_AXIS}
        ratio = pos.target_prob / pos.draft_prob if pos.draft_prob > 0 else float("inf")
        notes.append({"text": f"<b>position {pos.index + 1}</b>: drafted “{label(pos.draft_text, 12)}”  {t}/{d} = {ratio:.2f}  "
                              f"→ <b>{pos.verdict}</b>  ·  other tokens: {t} {num(pos.target_other)}, {d} {num(pos.draft_other)}",
                      "x": 0, "y": top, "xref": "paper", "yref": "paper", "xanchor": "left", "yanchor": "bottom",
                      "showarrow": False, "font": {"size": 12}})
        keep = _shown(pos.candidates, pos.draft_token, [lambda c: c.target_prob, lambda c: c.draft_prob])
        cands = [pos.candidates[j] for j in keep]
        labels = _unique([("★" if c.id == pos.draft_token else "") + label(c.text) for c in cands])
        axes = {"xaxis": x_ref, "yaxis": y_ref, "showlegend": i == 0}
        drafted = next(j for j, c in enumerate(cands) if c.id == pos.draft_token)
        colour = ACCEPT_COLOUR if pos.verdict == "accepted" else REJECT_COLOUR if pos.verdict == "rejected" else MUTED
        hover = [f"{show(c.text)}: {t} = {num(c.target_prob)}, {d} = {num(c.draft_prob)}" for c in cands]
        data += [
            {"type": "bar", "x": labels, "y": _floor([c.target_prob for c in cands]), "name": f"target {t}(x)",
             "marker": {"color": TARGET_COLOUR}, "offsetgroup": "t", "legendgroup": "t", "hovertext": hover,
             "hoverinfo": "text", **axes},
            {"type": "bar", "x": labels, "y": _floor([c.draft_prob for c in cands]), "name": f"draft {d}(x)",
             "marker": {"color": "white", "line": {"color": DRAFT_COLOUR, "width": 2},
                        "pattern": {"shape": "/", "fgcolor": DRAFT_COLOUR, "solidity": 0.5}},
             "offsetgroup": "d", "legendgroup": "d", "hovertext": hover, "hoverinfo": "text", **axes},
            {"type": "scatter", "x": [labels[drafted]], "y": [max(pos.target_prob, pos.draft_prob, LOG_FLOOR) * 1.5],
             "mode": "markers", "name": "drafted token (colour: verdict)", "legendgroup": "x",
             "marker": {"symbol": "triangle-down", "size": 13, "color": colour}, **axes},
        ]
    return _figure(data, _layout(f"2. Verify — target {t} vs draft {d} at each drafted position (log scale)", 150 + 200 * n,
                                 annotations=notes, barmode="group", **layout_axes))


def uniform_figure(trace: StepTrace, notation: str = "leviathan") -> go.Figure:
    """The draw u ~ U(0, 1) on a line, against each examined position's accept chance."""
    t, d = letters(notation)
    rule = "the mentored accept chance" if trace.kl_budget > 0 else f"min(1, {t}/{d})"
    if trace.greedy:
        rule = f"min(1, {t}/{d}), 0 or 1 at temperature 0: u does not decide"
    data, notes = [], []
    for pos in trace.positions:
        y = f"{pos.index + 1} “{label(pos.draft_text)}”"
        a, first = pos.accept_prob, pos.index == 0
        if pos.uniform is None:  # never examined: an earlier position was rejected
            data.append({"type": "bar", "y": [y], "x": [1], "base": 0, "orientation": "h", "width": 0.5,
                         "marker": {"color": "#d0d0d0"}, "name": "not examined", "showlegend": False})
            notes.append({"y": y, "x": 0.5, "text": "not examined (an earlier draft was rejected)", "showarrow": False,
                          "font": {"color": "#333"}})
            continue
        symbol = "✓" if pos.verdict == "accepted" else "✗"
        data += [
            {"type": "bar", "y": [y], "x": [a], "base": 0, "orientation": "h", "width": 0.5,
             "marker": {"color": ACCEPT_COLOUR}, "name": "accept zone u < accept chance", "legendgroup": "acc", "showlegend": first},
            {"type": "bar", "y": [y], "x": [1 - a], "base": a, "orientation": "h", "width": 0.5,
             "marker": {"color": "white", "line": {"color": REJECT_COLOUR, "width": 2},
                        "pattern": {"shape": "x", "fgcolor": REJECT_COLOUR, "solidity": 0.4}},
             "name": "reject zone", "legendgroup": "rej", "showlegend": first},
            {"type": "scatter", "y": [y], "x": [pos.uniform], "mode": "markers", "name": "uniform draw u",
             "legendgroup": "u", "marker": {"symbol": "diamond", "size": 15, "color": OVERLAP_COLOUR,
                                            "line": {"color": "white", "width": 1}}, "showlegend": first},
        ]
        notes.append({"y": y, "x": 1.0, "xanchor": "left", "text": f" u = {num(pos.uniform)} {symbol} {num(a)}",
                      "showarrow": False, "font": {"size": 12}})
    layout = _layout(f"2. Verify — uniform draw u against {rule}", 150 + 52 * len(trace.positions),
                     annotations=notes, xaxis={"range": [0, 1], "title": {"text": "u and the accept chance"}},
                     yaxis={"autorange": "reversed", "automargin": True})
    layout["margin"]["r"] = 120  # room for the "u = … ✓ …" notes right of the track
    return _figure(data, layout)


def residual_figure(trace: StepTrace, notation: str = "leviathan") -> go.Figure:
    """3. Correct: the residual norm(max(0, p - q)) (or mentored s) at the first rejection, or the bonus."""
    t, d = letters(notation)
    c = trace.correction
    lossy = trace.kl_budget > 0 and c.kind == "resampled"
    keep = _shown(c.candidates, c.token, [lambda x: x.final_prob] + ([] if c.kind == "bonus" else
                                                                      [lambda x: x.target_prob, lambda x: x.draft_prob]))
    cands = [c.candidates[j] for j in keep]
    labels = _unique([("★" if x.id == c.token else "") + label(x.text) for x in cands])
    data = []
    if c.kind == "resampled":
        dist = "mentored s(x)" if lossy else f"norm(max(0, {t} − {d}))"
        title = f"3. Correct — rejected at position {c.position + 1}: resample from {dist}"
        data += [
            {"type": "bar", "x": labels, "y": _floor([x.target_prob for x in cands]), "name": f"target {t}(x)",
             "marker": {"color": TARGET_COLOUR}, "offsetgroup": "t"},
            {"type": "bar", "x": labels, "y": _floor([x.draft_prob for x in cands]), "name": f"draft {d}(x)",
             "marker": {"color": "white", "line": {"color": DRAFT_COLOUR, "width": 2},
                        "pattern": {"shape": "/", "fgcolor": DRAFT_COLOUR, "solidity": 0.5}}, "offsetgroup": "d"},
        ]
        if lossy:
            residual = dict(zip((x.id for x in c.candidates), c.residual_probs))
            data.append({"type": "bar", "x": labels, "y": _floor([residual[x.id] for x in cands]),
                         "name": f"exact residual norm(max(0, {t} − {d}))", "offsetgroup": "r",
                         "marker": {"color": "white", "line": {"color": MUTED, "width": 2},
                                    "pattern": {"shape": ".", "fgcolor": MUTED}}})
    else:
        dist = f"the target's next distribution {t}"
        title = f"3. Correct — all {trace.gamma} drafts accepted: bonus token from {dist}"
    colour = FINAL_COLOUR if c.kind == "resampled" else BONUS_COLOUR
    chosen = next(j for j, x in enumerate(cands) if x.id == c.token)
    data += [
        {"type": "bar", "x": labels, "y": _floor([x.final_prob for x in cands]), "name": dist, "offsetgroup": "f",
         "marker": {"color": colour}},
        {"type": "scatter", "x": [labels[chosen]], "y": [max(cands[chosen].final_prob, LOG_FLOOR) * 1.6],
         "mode": "markers", "marker": {"symbol": "star", "size": 15, "color": OVERLAP_COLOUR},
         "name": f"{c.kind} token “{label(c.text, 12)}”"},
    ]
    title += f" · other tokens: {num(c.final_other)}"
    return _figure(data, _layout(title, 360, yaxis=PROB_AXIS, xaxis={"type": "category"}, barmode="group"))


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


def _unique(labels: list[str]) -> list[str]:
    seen: dict[str, int] = {}
    out = []
    for text in labels:
        seen[text] = seen.get(text, 0) + 1
        out.append(text if seen[text] == 1 else f"{text} ({seen[text]})")
    return out


# ----------------------------------------------------------------------------- playground (toy distributions)


def _token_labels(tokens: list[str], marks: list[str] | None = None) -> list[str]:
    labels = _unique([label(t, 10) for t in tokens])
    return labels if marks is None else [f"{x} {m}".strip() for x, m in zip(labels, marks)]


def decomposition_figure(dec: dict, tokens: list[str], notation: str = "leviathan") -> go.Figure:
    """Accepted mass min(p, q) stacked with rejected mass x residual: the stack is p, token by token."""
    t, d = letters(notation)
    marks = ["▼ over" if o else "▲ under" if u else "" for o, u in zip(dec["over_sampled"], dec["under_sampled"])]
    x = _token_labels(tokens, marks)
    data = [
        {"type": "bar", "x": x, "y": dec["accepted"], "name": f"accepted: min({t}, {d})", "marker": {"color": ACCEPT_COLOUR}},
        {"type": "bar", "x": x, "y": dec["rejected_times_residual"],
         "name": f"rejected mass {1 - dec['acceptance_rate']:.2f} × residual norm(max(0, {t} − {d}))",
         "marker": {"color": "white", "line": {"color": FINAL_COLOUR, "width": 2},
                    "pattern": {"shape": "/", "fgcolor": FINAL_COLOUR, "solidity": 0.5}}},
        {"type": "scatter", "x": x, "y": dec["target"], "mode": "markers", "name": f"target {t}: the stack's height",
         "marker": {"symbol": "line-ew-open", "size": 30, "color": OVERLAP_COLOUR, "line": {"width": 3}}},
        {"type": "scatter", "x": x, "y": dec["draft"], "mode": "markers", "name": f"draft {d}",
         "marker": {"symbol": "diamond-open", "size": 12, "color": DRAFT_COLOUR, "line": {"width": 2}}},
    ]
    title = (f"Why the output is exactly {t}: acceptance rate Σmin({t},{d}) = 1 − TV = {dec['acceptance_rate']:.3f} "
             f"(▼ over-sampled by the draft, ▲ under-sampled)")
    return _figure(data, _layout(title, 380, barmode="stack", yaxis={"rangemode": "tozero", "title": {"text": "probability"}},
                                 xaxis={"type": "category"}))


VARIANT_STYLE = {
    "exact": ("exact: resample from the residual", ACCEPT_COLOUR, ""),
    "resample-target": ("wrong: resample from the target", REJECT_COLOUR, "x"),
    "keep-draft": ("wrong: keep the draft token anyway", DRAFT_COLOUR, "/"),
}


def histogram_figure(results: list[dict], tokens: list[str], notation: str = "leviathan") -> go.Figure:
    """Monte Carlo frequencies of each rule beside the target, with chi-square p-values."""
    t, _ = letters(notation)
    x = _token_labels(tokens)
    data = []
    for r in results:
        name, colour, shape = VARIANT_STYLE[r["variant"]]
        marker = {"color": colour} if not shape else {"color": "white", "line": {"color": colour, "width": 2},
                                                       "pattern": {"shape": shape, "fgcolor": colour, "solidity": 0.45}}
        data.append({"type": "bar", "x": x, "y": r["frequencies"], "name": f"{name} (p-value {r['p_value']:.3g})",
                     "marker": marker})
    if results:
        data.append({"type": "scatter", "x": x, "y": results[0]["expected"], "mode": "markers", "name": f"target {t}",
                     "marker": {"symbol": "line-ew-open", "size": 26, "color": OVERLAP_COLOUR, "line": {"width": 3}}})
    n = results[0]["samples"] if results else 0
    title = f"{n:,} rounds per rule: observed frequencies against {t} (chi-square p-value: small = biased)"
    return _figure(data, _layout(title, 400, barmode="group", yaxis={"rangemode": "tozero", "title": {"text": "frequency"}},
                                 xaxis={"type": "category"}))


def mentored_figure(m: dict, tokens: list[str], notation: str = "leviathan") -> go.Figure:
    """Seed 003's plan: tokens by ratio with the two thresholds, and the acceptance-vs-KL frontier."""
    t, d = letters(notation)
    order = m["order"]
    x = _token_labels([tokens[i] for i in order], [f"({r:.2f})" if r != float("inf") else "(∞)" for r in m["ratio"]])
    pick = (lambda key: [m[key][i] for i in order])
    ax = {"xaxis": "x", "yaxis": "y"}
    data = [
        {"type": "bar", "x": x, "y": pick("target"), "name": f"target {t}", "marker": {"color": TARGET_COLOUR}, **ax},
        {"type": "bar", "x": x, "y": pick("output"), "name": "mentored output π", "marker": {"color": FINAL_COLOUR}, **ax},
        {"type": "bar", "x": x, "y": pick("resample"), "name": "mentored resampling s",
         "marker": {"color": "white", "line": {"color": FINAL_COLOUR, "width": 2},
                    "pattern": {"shape": ".", "fgcolor": FINAL_COLOUR, "solidity": 0.4}}, **ax},
        {"type": "scatter", "x": x, "y": pick("exact_residual"), "mode": "markers",
         "name": f"exact residual norm(max(0, {t} − {d}))", "marker": {"symbol": "line-ew-open", "size": 18,
                                                                       "color": MUTED, "line": {"width": 3}}, **ax},
        {"type": "bar", "x": x, "y": pick("draft"), "name": f"draft {d}",
         "marker": {"color": "white", "line": {"color": DRAFT_COLOUR, "width": 2},
                    "pattern": {"shape": "/", "fgcolor": DRAFT_COLOUR, "solidity": 0.5}}, **ax},
        {"type": "scatter", "x": x, "y": pick("accept_chance"), "mode": "lines+markers", "name": "mentored accept chance",
         "line": {"color": ACCEPT_COLOUR, "width": 3}, "xaxis": "x", "yaxis": "y3"},
        {"type": "scatter", "x": x, "y": pick("exact_accept_chance"), "mode": "lines+markers",
         "name": f"exact accept chance min(1, {t}/{d})", "line": {"color": MUTED, "dash": "dash"}, "xaxis": "x", "yaxis": "y3"},
        {"type": "scatter", "x": m["frontier"]["kl"], "y": m["frontier"]["acceptance_rate"], "mode": "lines",
         "name": "best acceptance at each KL", "line": {"color": OVERLAP_COLOUR}, "xaxis": "x2", "yaxis": "y2"},
        {"type": "scatter", "x": [m["kl"]], "y": [m["acceptance_rate"]], "mode": "markers", "name": "this budget",
         "marker": {"symbol": "star", "size": 16, "color": FINAL_COLOUR}, "xaxis": "x2", "yaxis": "y2"},
        {"type": "scatter", "x": [0], "y": [m["exact_acceptance_rate"]], "mode": "markers", "name": "exact decoding (KL 0)",
         "marker": {"symbol": "circle", "size": 11, "color": ACCEPT_COLOUR}, "xaxis": "x2", "yaxis": "y2"},
    ]
    title = (f"Mentored decoding at KL ≤ {m['kl_budget']:g}: acceptance {m['acceptance_rate']:.3f} "
             f"(exact {m['exact_acceptance_rate']:.3f}), KL spent {m['kl']:.3f}; thresholds on {t}/{d}: "
             f"lower {m['lower_threshold']:.2f}, upper {m['upper_threshold']:.2f}")
    layout = _layout(title, 420, barmode="group",
                     xaxis={"domain": [0, 0.58], "type": "category", "title": {"text": f"tokens by ratio {t}/{d}"}},
                     yaxis={"rangemode": "tozero", "title": {"text": "probability"}},
                     yaxis3={"overlaying": "y", "side": "right", "range": [0, 1.05], "showgrid": False,
                             "title": {"text": "accept chance"}},
                     xaxis2={"domain": [0.7, 1], "anchor": "y2", "title": {"text": f"KL({t} ‖ output)"}},
                     yaxis2={"anchor": "x2", "range": [0, 1.02], "title": {"text": "acceptance rate"}})
    return _figure(data, layout)


# ----------------------------------------------------------------------------- analytics (debugging a pair)


def rolling_alpha(traces: list[StepTrace], window: int = 10) -> list[float]:
    """Leviathan's alpha over the last `window` steps at each step: accepted / tested drafts."""
    out = []
    for i in range(len(traces)):
        recent = traces[max(0, i - window + 1): i + 1]
        tested = sum(sum(p.uniform is not None for p in tr.positions) for tr in recent)
        out.append(sum(tr.n_accepted for tr in recent) / tested if tested else 0.0)
    return out


def analytics_figure(traces: list[StepTrace], m: dict, notation: str = "leviathan") -> go.Figure:
    """Four panels from the run's traces and its metrics(): the acceptance-length histogram against
    the truncated geometric law of the measured alpha; per-position acceptance against alpha^(i+1);
    rolling alpha with each step's TV and KL between the two models; expected speedup against gamma
    from the measured alpha and c (Thm 3.8), with the current and the best gamma."""
    from . import theory
    from .config import GAMMA_MAX

    t, d = letters(notation)
    gamma, alpha = m.get("gamma") or 0, m.get("acceptance_rate") or 0.0
    ks = list(range(gamma + 1))
    steps = list(range(1, len(traces) + 1))

    def tested_mean(tr, key):
        tested = [getattr(p, key) for p in tr.positions if p.uniform is not None]
        return sum(tested) / len(tested) if tested else 0.0
    data = [
        {"type": "bar", "x": ks, "y": m.get("acceptance_length_histogram", []), "name": "steps by drafts accepted",
         "marker": {"color": ACCEPT_COLOUR}, "xaxis": "x", "yaxis": "y"},
        {"type": "scatter", "x": ks, "y": m.get("expected_acceptance_length_histogram", []), "mode": "markers+lines",
         "name": "truncated geometric at the measured α", "line": {"color": OVERLAP_COLOUR, "dash": "dot"},
         "xaxis": "x", "yaxis": "y"},
        {"type": "bar", "x": list(range(1, gamma + 1)), "y": m.get("per_position_acceptance", []),
         "name": "per-position acceptance", "marker": {"color": TARGET_COLOUR}, "xaxis": "x2", "yaxis": "y2"},
        {"type": "scatter", "x": list(range(1, gamma + 1)), "y": [alpha ** (i + 1) for i in range(gamma)],
         "mode": "markers+lines", "name": "α^i if acceptances were independent", "line": {"color": OVERLAP_COLOUR, "dash": "dot"},
         "xaxis": "x2", "yaxis": "y2"},
        {"type": "scatter", "x": steps, "y": rolling_alpha(traces), "mode": "lines", "name": "α over the last 10 steps",
         "line": {"color": ACCEPT_COLOUR, "width": 3}, "xaxis": "x3", "yaxis": "y3"},
        {"type": "scatter", "x": steps, "y": [tested_mean(tr, "tv") for tr in traces], "mode": "lines",
         "name": f"TV({t}, {d}) per step", "line": {"color": REJECT_COLOUR}, "xaxis": "x3", "yaxis": "y3"},
        {"type": "scatter", "x": steps, "y": [tested_mean(tr, "kl") for tr in traces], "mode": "lines",
         "name": f"KL({t} ‖ {d}) per step", "line": {"color": FINAL_COLOUR, "dash": "dash"}, "xaxis": "x3", "yaxis": "y3"},
    ]
    c = m.get("cost_ratio_c")
    gammas = list(range(1, GAMMA_MAX + 1))
    if c:
        curve = [theory.expected_speedup(alpha, g, c) for g in gammas]
        best = m["best_gamma"]
        data += [
            {"type": "scatter", "x": gammas, "y": curve, "mode": "lines", "name": f"Thm 3.8 at α {alpha:.2f}, c {c:.2f}",
             "line": {"color": OVERLAP_COLOUR}, "xaxis": "x4", "yaxis": "y4"},
            {"type": "scatter", "x": [gamma, best], "y": [curve[gamma - 1], curve[best - 1]], "mode": "markers+text",
             "text": ["current γ", "best γ"], "textposition": "top center", "name": "current and best γ",
             "marker": {"symbol": ["circle", "star"], "size": 13, "color": [TARGET_COLOUR, FINAL_COLOUR]},
             "xaxis": "x4", "yaxis": "y4"},
        ]
    else:  # no timings (a report): what each gamma yields per target pass
        curve = [theory.expected_tokens_per_target_call(alpha, g) for g in gammas]
        data.append({"type": "scatter", "x": gammas, "y": curve, "mode": "lines", "name": "expected tokens per target pass",
                     "line": {"color": OVERLAP_COLOUR}, "xaxis": "x4", "yaxis": "y4"})
    if gamma and c and m.get("speedup") and not m.get("warming_up"):
        data.append({"type": "scatter", "x": [gamma], "y": [m["speedup"]], "mode": "markers",
                     "name": f"measured speedup ×{m['speedup']:.2f}", "marker": {"symbol": "diamond", "size": 12,
                                                                               "color": ACCEPT_COLOUR},
                     "xaxis": "x4", "yaxis": "y4"})
    elif gamma and not c:
        data.append({"type": "scatter", "x": [gamma], "y": [m.get("tokens_per_target_call", 0)], "mode": "markers",
                     "name": f"measured tokens per pass ({m.get('tokens_per_target_call', 0):.2f}; Eq. 1 expects "
                             f"{m.get('expected_tokens_per_target_call', 0):.2f})",
                     "marker": {"symbol": "diamond", "size": 12, "color": ACCEPT_COLOUR}, "xaxis": "x4", "yaxis": "y4"})
    layout = _layout("Why the acceptance is what it is", 760, barmode="group",
                     xaxis={"domain": [0, 0.45], "anchor": "y", "title": {"text": "drafts accepted in a step"}, "dtick": 1},
                     yaxis={"domain": [0.58, 0.92], "anchor": "x", "title": {"text": "steps"}},
                     xaxis2={"domain": [0.55, 1], "anchor": "y2", "title": {"text": "drafted position"}, "dtick": 1},
                     yaxis2={"domain": [0.58, 0.92], "anchor": "x2", "range": [0, 1.05], "title": {"text": "accepted share"}},
                     xaxis3={"domain": [0, 0.45], "anchor": "y3", "title": {"text": "step"}},
                     yaxis3={"domain": [0, 0.42], "anchor": "x3", "rangemode": "tozero"},
                     xaxis4={"domain": [0.55, 1], "anchor": "y4", "title": {"text": "γ"}},
                     yaxis4={"domain": [0, 0.42], "anchor": "x4", "rangemode": "tozero",
                             "title": {"text": "expected speedup" if c else "tokens per pass"}})
    layout["legend"] = {"orientation": "h", "y": 1.02, "yanchor": "bottom", "x": 0, "font": {"size": 11}}
    layout["margin"] = {"l": 55, "r": 20, "t": 190, "b": 50}
    layout["title"]["y"] = 0.99
    return _figure(data, layout)


def sweep_figure(sweep: dict, notation: str = "leviathan") -> go.Figure:
    """Acceptance of speculative sampling vs exact-match verification across temperatures."""
    t, d = letters(notation)
    temps = sweep["temperatures"]
    data = [
        {"type": "scatter", "x": temps, "y": sweep["acceptance_rate"], "mode": "lines+markers",
         "name": f"speculative sampling: Σmin({t}, {d})", "line": {"color": ACCEPT_COLOUR, "width": 3}},
        {"type": "scatter", "x": temps, "y": sweep["exact_match_of_samples"], "mode": "lines+markers",
         "name": f"exact match of two samples: Σ {t}·{d}", "line": {"color": REJECT_COLOUR, "dash": "dash"}},
        {"type": "scatter", "x": [0], "y": [sweep["greedy_exact_match"]], "mode": "markers",
         "name": "greedy: argmaxes agree (T = 0)", "marker": {"symbol": "star", "size": 15, "color": OVERLAP_COLOUR}},
    ]
    return _figure(data, _layout(f"On this context ({sweep['positions']} positions): acceptance by temperature", 360,
                                 xaxis={"title": {"text": "temperature"}},
                                 yaxis={"range": [0, 1.02], "title": {"text": "mean acceptance"}}))
