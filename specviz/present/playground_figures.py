"""The playground's figures: the decomposition that adds up to p, the Monte Carlo histograms, mentored decoding."""
from __future__ import annotations

import plotly.graph_objects as go

from ..core.notation import letters, p_value_text
from .palette import ACCEPT_COLOUR, DRAFT_COLOUR, FINAL_COLOUR, MUTED, OVERLAP_COLOUR, REJECT_COLOUR, TARGET_COLOUR
from .plotting import base_layout, plain_figure, token_labels


def decomposition_figure(dec: dict, tokens: list[str], notation: str = "leviathan") -> go.Figure:
    """Accepted mass min(p, q) stacked with rejected mass x residual: the stack is p, token by token."""
    t, d = letters(notation)
    marks = ["▼ over" if o else "▲ under" if u else "" for o, u in zip(dec["over_sampled"], dec["under_sampled"])]
    x = token_labels(tokens, marks)
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
    return plain_figure(data, base_layout(title, 380, barmode="stack", yaxis={"rangemode": "tozero", "title": {"text": "probability"}},
                                 xaxis={"type": "category"}))


VARIANT_STYLE = {
    "exact": ("exact: resample from the residual", ACCEPT_COLOUR, ""),
    "resample-target": ("wrong: resample from the target", REJECT_COLOUR, "x"),
    "keep-draft": ("wrong: keep the draft token anyway", DRAFT_COLOUR, "/"),
    "greedy-match": ("wrong: keep the draft while the argmaxes agree", MUTED, "."),
}


def histogram_figure(results: list[dict], tokens: list[str], notation: str = "leviathan", styles: dict | None = None,
                     title: str | None = None) -> go.Figure:
    """Monte Carlo frequencies of each rule beside the target, with chi-square p-values (styles: by variant)."""
    styles = VARIANT_STYLE if styles is None else styles
    t, _ = letters(notation)
    x = token_labels(tokens)
    data = []
    for r in results:
        name, colour, shape = styles[r["variant"]]
        marker = {"color": colour} if not shape else {"color": "white", "line": {"color": colour, "width": 2},
                                                       "pattern": {"shape": shape, "fgcolor": colour, "solidity": 0.45}}
        data.append({"type": "bar", "x": x, "y": r["frequencies"], "name": f"{name} (p-value {p_value_text(r['p_value'])})",
                     "marker": marker})
    if results:
        data.append({"type": "scatter", "x": x, "y": results[0]["expected"], "mode": "markers", "name": f"target {t}",
                     "marker": {"symbol": "line-ew-open", "size": 26, "color": OVERLAP_COLOUR, "line": {"width": 3}}})
    n = results[0]["samples"] if results else 0
    title = title or f"{n:,} rounds per rule: observed frequencies against {t} (chi-square p-value: small = biased)"
    return plain_figure(data, base_layout(title, 400, barmode="group", yaxis={"rangemode": "tozero", "title": {"text": "frequency"}},
                                 xaxis={"type": "category"}))


def mentored_figure(m: dict, tokens: list[str], notation: str = "leviathan") -> go.Figure:
    """Mentored decoding's plan (Tran-Thien 2023): tokens by ratio with the two thresholds, and the acceptance-vs-KL frontier."""
    t, d = letters(notation)
    order = m["order"]
    x = token_labels([tokens[i] for i in order], [f"({r:.2f})" if r != float("inf") else "(∞)" for r in m["ratio"]])
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
    layout = base_layout(title, 420, barmode="group",
                     xaxis={"domain": [0, 0.58], "type": "category", "title": {"text": f"tokens by ratio {t}/{d}"}},
                     yaxis={"rangemode": "tozero", "title": {"text": "probability"}},
                     yaxis3={"overlaying": "y", "side": "right", "range": [0, 1.05], "showgrid": False,
                             "title": {"text": "accept chance"}},
                     xaxis2={"domain": [0.7, 1], "anchor": "y2", "title": {"text": f"KL({t} ‖ output)"}},
                     yaxis2={"anchor": "x2", "range": [0, 1.02], "title": {"text": "acceptance rate"}})
    return plain_figure(data, layout)


# ----------------------------------------------------------------------------- analytics (debugging a pair)
