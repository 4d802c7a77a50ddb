"""The playground's figures: the decomposition that adds up to p, the Monte Carlo histograms, mentored decoding."""
from __future__ import annotations

import plotly.graph_objects as go

from ..core.notation import letters, p_value_text
from .i18n import tr
from .palette import ACCEPT_COLOUR, DRAFT_COLOUR, FINAL_COLOUR, MUTED, OVERLAP_COLOUR, REJECT_COLOUR, TARGET_COLOUR
from .plotting import base_layout, plain_figure, token_labels


def decomposition_figure(dec: dict, tokens: list[str], notation: str = "leviathan", lang: str = "en") -> go.Figure:
    """Accepted mass min(p, q) stacked with rejected mass x residual: the stack is p, token by token."""
    t, d = letters(notation)
    over, under = tr(lang, "fig.over"), tr(lang, "fig.under")
    marks = [over if o else under if u else "" for o, u in zip(dec["over_sampled"], dec["under_sampled"])]
    x = token_labels(tokens, marks)
    data = [
        {"type": "bar", "x": x, "y": dec["accepted"], "name": tr(lang, "fig.d_accepted", t=t, d=d), "marker": {"color": ACCEPT_COLOUR}},
        {"type": "bar", "x": x, "y": dec["rejected_times_residual"],
         "name": tr(lang, "fig.d_rejected", m=f"{1 - dec['acceptance_rate']:.2f}", t=t, d=d),
         "marker": {"color": "white", "line": {"color": FINAL_COLOUR, "width": 2},
                    "pattern": {"shape": "/", "fgcolor": FINAL_COLOUR, "solidity": 0.5}}},
        {"type": "scatter", "x": x, "y": dec["target"], "mode": "markers", "name": tr(lang, "fig.d_target", t=t),
         "marker": {"symbol": "line-ew-open", "size": 30, "color": OVERLAP_COLOUR, "line": {"width": 3}}},
        {"type": "scatter", "x": x, "y": dec["draft"], "mode": "markers", "name": tr(lang, "fig.draft", d=d),
         "marker": {"symbol": "diamond-open", "size": 12, "color": DRAFT_COLOUR, "line": {"width": 2}}},
    ]
    title = tr(lang, "fig.d_title", t=t, d=d, a=f"{dec['acceptance_rate']:.3f}")
    return plain_figure(data, base_layout(title, 380, barmode="stack", yaxis={"rangemode": "tozero", "title": {"text": tr(lang, "fig.ax_probability")}},
                                 xaxis={"type": "category"}))


VARIANT_STYLE = {  # variant -> (catalogue key of its name, colour, bar pattern)
    "exact": ("variant.exact", ACCEPT_COLOUR, ""),
    "resample-target": ("variant.resample-target", REJECT_COLOUR, "x"),
    "keep-draft": ("variant.keep-draft", DRAFT_COLOUR, "/"),
    "greedy-match": ("variant.greedy-match", MUTED, "."),
}


def histogram_figure(results: list[dict], tokens: list[str], notation: str = "leviathan", styles: dict | None = None,
                     title: str | None = None, lang: str = "en") -> go.Figure:
    """Monte Carlo frequencies of each rule beside the target, with chi-square p-values (styles: by variant,
    each name a catalogue key taking the target letter {t})."""
    styles = VARIANT_STYLE if styles is None else styles
    t, _ = letters(notation)
    x = token_labels(tokens)
    data = []
    for r in results:
        key, colour, shape = styles[r["variant"]]
        name = tr(lang, key, t=t)
        marker = {"color": colour} if not shape else {"color": "white", "line": {"color": colour, "width": 2},
                                                       "pattern": {"shape": shape, "fgcolor": colour, "solidity": 0.45}}
        data.append({"type": "bar", "x": x, "y": r["frequencies"], "name": tr(lang, "fig.hist_bar", name=name, p=p_value_text(r['p_value'])),
                     "marker": marker})
    if results:
        data.append({"type": "scatter", "x": x, "y": results[0]["expected"], "mode": "markers", "name": tr(lang, "fig.target", t=t),
                     "marker": {"symbol": "line-ew-open", "size": 26, "color": OVERLAP_COLOUR, "line": {"width": 3}}})
    n = results[0]["samples"] if results else 0
    title = title or tr(lang, "fig.hist_title", n=f"{n:,}", t=t)
    return plain_figure(data, base_layout(title, 400, barmode="group", yaxis={"rangemode": "tozero", "title": {"text": tr(lang, "fig.ax_frequency")}},
                                 xaxis={"type": "category"}))


def mentored_figure(m: dict, tokens: list[str], notation: str = "leviathan", lang: str = "en") -> go.Figure:
    """Mentored decoding's plan (Tran-Thien 2023): tokens by ratio with the two thresholds, and the acceptance-vs-KL frontier."""
    t, d = letters(notation)
    order = m["order"]
    x = token_labels([tokens[i] for i in order], [f"({r:.2f})" if r != float("inf") else "(∞)" for r in m["ratio"]])
    pick = (lambda key: [m[key][i] for i in order])
    ax = {"xaxis": "x", "yaxis": "y"}
    data = [
        {"type": "bar", "x": x, "y": pick("target"), "name": tr(lang, "fig.target", t=t), "marker": {"color": TARGET_COLOUR}, **ax},
        {"type": "bar", "x": x, "y": pick("output"), "name": tr(lang, "fig.m_output"), "marker": {"color": FINAL_COLOUR}, **ax},
        {"type": "bar", "x": x, "y": pick("resample"), "name": tr(lang, "fig.m_resample"),
         "marker": {"color": "white", "line": {"color": FINAL_COLOUR, "width": 2},
                    "pattern": {"shape": ".", "fgcolor": FINAL_COLOUR, "solidity": 0.4}}, **ax},
        {"type": "scatter", "x": x, "y": pick("exact_residual"), "mode": "markers",
         "name": tr(lang, "fig.exact_residual", t=t, d=d), "marker": {"symbol": "line-ew-open", "size": 18,
                                                                       "color": MUTED, "line": {"width": 3}}, **ax},
        {"type": "bar", "x": x, "y": pick("draft"), "name": tr(lang, "fig.draft", d=d),
         "marker": {"color": "white", "line": {"color": DRAFT_COLOUR, "width": 2},
                    "pattern": {"shape": "/", "fgcolor": DRAFT_COLOUR, "solidity": 0.5}}, **ax},
        {"type": "scatter", "x": x, "y": pick("accept_chance"), "mode": "lines+markers", "name": tr(lang, "fig.m_chance"),
         "line": {"color": ACCEPT_COLOUR, "width": 3}, "xaxis": "x", "yaxis": "y3"},
        {"type": "scatter", "x": x, "y": pick("exact_accept_chance"), "mode": "lines+markers",
         "name": tr(lang, "fig.m_exact_chance", t=t, d=d), "line": {"color": MUTED, "dash": "dash"}, "xaxis": "x", "yaxis": "y3"},
        {"type": "scatter", "x": m["frontier"]["kl"], "y": m["frontier"]["acceptance_rate"], "mode": "lines",
         "name": tr(lang, "fig.m_frontier"), "line": {"color": OVERLAP_COLOUR}, "xaxis": "x2", "yaxis": "y2"},
        {"type": "scatter", "x": [m["kl"]], "y": [m["acceptance_rate"]], "mode": "markers", "name": tr(lang, "fig.m_budget"),
         "marker": {"symbol": "star", "size": 16, "color": FINAL_COLOUR}, "xaxis": "x2", "yaxis": "y2"},
        {"type": "scatter", "x": [0], "y": [m["exact_acceptance_rate"]], "mode": "markers", "name": tr(lang, "fig.m_exact"),
         "marker": {"symbol": "circle", "size": 11, "color": ACCEPT_COLOUR}, "xaxis": "x2", "yaxis": "y2"},
    ]
    title = tr(lang, "fig.m_title", budget=f"{m['kl_budget']:g}", a=f"{m['acceptance_rate']:.3f}",
               e=f"{m['exact_acceptance_rate']:.3f}", kl=f"{m['kl']:.3f}", t=t, d=d,
               lo=f"{m['lower_threshold']:.2f}", hi=f"{m['upper_threshold']:.2f}")
    layout = base_layout(title, 420, barmode="group",
                     xaxis={"domain": [0, 0.58], "type": "category", "title": {"text": tr(lang, "fig.ax_by_ratio", t=t, d=d)}},
                     yaxis={"rangemode": "tozero", "title": {"text": tr(lang, "fig.ax_probability")}},
                     yaxis3={"overlaying": "y", "side": "right", "range": [0, 1.05], "showgrid": False,
                             "title": {"text": tr(lang, "fig.ax_accept_chance")}},
                     xaxis2={"domain": [0.7, 1], "anchor": "y2", "title": {"text": tr(lang, "fig.ax_kl_output", t=t)}},
                     yaxis2={"anchor": "x2", "range": [0, 1.02], "title": {"text": tr(lang, "fig.ax_acceptance_rate")}})
    return plain_figure(data, layout)


# ----------------------------------------------------------------------------- analytics (debugging a pair)
