"""The run so far and the debugging panels: history, the analytics figure, the temperature sweep."""
from __future__ import annotations

import plotly.graph_objects as go

from ..core.notation import letters
from ..core.trace import StepTrace
from .i18n import tr
from .palette import ACCEPT_COLOUR, BONUS_COLOUR, FINAL_COLOUR, OVERLAP_COLOUR, REJECT_COLOUR, TARGET_COLOUR
from .plotting import base_layout, plain_figure


def history_figure(traces: list[StepTrace], notation: str = "leviathan", lang: str = "en") -> go.Figure:
    """The whole run: drafts accepted per step, and the mean overlap sum min(p, q) of the tested positions."""
    t, d = letters(notation)
    steps = [tr.step for tr in traces]
    overlap = [sum(p.overlap for p in tr.positions if p.uniform is not None) /
               max(1, sum(p.uniform is not None for p in tr.positions)) for tr in traces]
    kinds = [tr.correction.kind for tr in traces]
    data = [
        {"type": "bar", "x": steps, "y": [tr.n_accepted for tr in traces], "name": tr(lang, "fig.h_accepted"),
         "marker": {"color": ACCEPT_COLOUR}, "opacity": 0.6},
        {"type": "scatter", "x": steps, "y": [tr.n_accepted + 0.5 for tr in traces], "mode": "markers",
         "marker": {"symbol": ["star" if k == "bonus" else "circle-open" for k in kinds], "size": 11,
                    "color": [BONUS_COLOUR if k == "bonus" else FINAL_COLOUR for k in kinds]},
         "name": tr(lang, "fig.h_then")},
        {"type": "scatter", "x": steps, "y": overlap, "mode": "lines+markers", "yaxis": "y2",
         "name": tr(lang, "fig.h_overlap", t=t, d=d), "line": {"color": OVERLAP_COLOUR, "dash": "dot"}},
    ]
    gamma = traces[-1].gamma if traces else 1
    return plain_figure(data, base_layout(tr(lang, "fig.h_title"), 300,
                                 xaxis={"title": {"text": tr(lang, "fig.ax_step")}, "dtick": 1 if len(steps) <= 30 else None},
                                 yaxis={"range": [0, gamma + 1], "title": {"text": tr(lang, "fig.ax_accepted")}},
                                 yaxis2={"range": [0, 1.05], "overlaying": "y", "side": "right", "showgrid": False,
                                         "title": {"text": tr(lang, "fig.ax_overlap")}}))


def rolling_alpha(traces: list[StepTrace], window: int = 10) -> list[float]:
    """Leviathan's alpha over the last `window` steps at each step: accepted / tested drafts."""
    out = []
    for i in range(len(traces)):
        recent = traces[max(0, i - window + 1): i + 1]
        tested = sum(sum(p.uniform is not None for p in tr.positions) for tr in recent)
        out.append(sum(tr.n_accepted for tr in recent) / tested if tested else 0.0)
    return out


def analytics_figure(traces: list[StepTrace], m: dict, notation: str = "leviathan", lang: str = "en") -> go.Figure:
    """Four panels from the run's traces and its metrics(): the acceptance-length histogram against
    the truncated geometric law of the measured alpha; per-position acceptance against alpha^(i+1);
    rolling alpha with each step's TV and KL between the two models; expected speedup against gamma
    from the measured alpha and c (Thm 3.8), with the current and the best gamma."""
    gamma, alpha = m.get("gamma") or 0, m.get("acceptance_rate") or 0.0
    data = [*acceptance_panels(m, gamma, alpha, lang), *rolling_panel(traces, notation, lang),
            *speedup_panel(m, gamma, alpha, lang)]
    return plain_figure(data, analytics_layout(m.get("cost_ratio_c"), lang))


def acceptance_panels(m: dict, gamma: int, alpha: float, lang: str) -> list[dict]:
    """Top left, the acceptance-length histogram and its geometric law; top right, per-position acceptance
    and alpha^(i+1)."""
    ks = list(range(gamma + 1))
    return [
        {"type": "bar", "x": ks, "y": m.get("acceptance_length_histogram", []), "name": tr(lang, "fig.a_hist"),
         "marker": {"color": ACCEPT_COLOUR}, "xaxis": "x", "yaxis": "y"},
        {"type": "scatter", "x": ks, "y": m.get("expected_acceptance_length_histogram", []), "mode": "markers+lines",
         "name": tr(lang, "fig.a_geom"), "line": {"color": OVERLAP_COLOUR, "dash": "dot"},
         "xaxis": "x", "yaxis": "y"},
        {"type": "bar", "x": list(range(1, gamma + 1)), "y": m.get("per_position_acceptance", []),
         "name": tr(lang, "fig.a_perpos"), "marker": {"color": TARGET_COLOUR}, "xaxis": "x2", "yaxis": "y2"},
        {"type": "scatter", "x": list(range(1, gamma + 1)), "y": [alpha ** (i + 1) for i in range(gamma)],
         "mode": "markers+lines", "name": tr(lang, "fig.a_indep"), "line": {"color": OVERLAP_COLOUR, "dash": "dot"},
         "xaxis": "x2", "yaxis": "y2"},
    ]


def rolling_panel(traces: list[StepTrace], notation: str, lang: str) -> list[dict]:
    """Bottom left: rolling alpha, with each step's mean TV and KL over its tested positions."""
    t, d = letters(notation)
    steps = list(range(1, len(traces) + 1))

    def tested_mean(tr, key):
        tested = [getattr(p, key) for p in tr.positions if p.uniform is not None]
        return sum(tested) / len(tested) if tested else 0.0
    return [
        {"type": "scatter", "x": steps, "y": rolling_alpha(traces), "mode": "lines", "name": tr(lang, "fig.a_rolling", n=10),
         "line": {"color": ACCEPT_COLOUR, "width": 3}, "xaxis": "x3", "yaxis": "y3"},
        {"type": "scatter", "x": steps, "y": [tested_mean(tr, "tv") for tr in traces], "mode": "lines",
         "name": tr(lang, "fig.a_tv", t=t, d=d), "line": {"color": REJECT_COLOUR}, "xaxis": "x3", "yaxis": "y3"},
        {"type": "scatter", "x": steps, "y": [tested_mean(tr, "kl") for tr in traces], "mode": "lines",
         "name": tr(lang, "fig.a_kl", t=t, d=d), "line": {"color": FINAL_COLOUR, "dash": "dash"}, "xaxis": "x3", "yaxis": "y3"},
    ]


def speedup_panel(m: dict, gamma: int, alpha: float, lang: str) -> list[dict]:
    """Bottom right: expected speedup against gamma (Thm 3.8) where the run has timings, else tokens per
    target pass; the run's own figure on it."""
    from ..core import theory
    from ..core.config import GAMMA_MAX

    c = m.get("cost_ratio_c")
    gammas = list(range(1, GAMMA_MAX + 1))
    if c:
        curve = [theory.expected_speedup(alpha, g, c) for g in gammas]
        best = m["best_gamma"]
        data = [
            {"type": "scatter", "x": gammas, "y": curve, "mode": "lines", "name": tr(lang, "fig.a_thm", a=f"{alpha:.2f}", c=f"{c:.2f}"),
             "line": {"color": OVERLAP_COLOUR}, "xaxis": "x4", "yaxis": "y4"},
            {"type": "scatter", "x": [gamma, best], "y": [curve[gamma - 1], curve[best - 1]], "mode": "markers+text",
             "text": [tr(lang, "fig.a_current"), tr(lang, "fig.a_best")], "textposition": ["bottom center", "top center"],  # apart when best = current ± 1
             "cliponaxis": False,  # the best γ sits at the curve's top: its label above the panel stays whole
             "name": tr(lang, "fig.a_gammas"),
             "marker": {"symbol": ["circle", "star"], "size": 13, "color": [TARGET_COLOUR, FINAL_COLOUR]},
             "xaxis": "x4", "yaxis": "y4"},
        ]
    else:  # no timings (a report): what each gamma yields per target pass
        curve = [theory.expected_tokens_per_target_call(alpha, g) for g in gammas]
        data = [{"type": "scatter", "x": gammas, "y": curve, "mode": "lines", "name": tr(lang, "fig.a_expected_tpp"),
                 "line": {"color": OVERLAP_COLOUR}, "xaxis": "x4", "yaxis": "y4"}]
    if gamma and c and m.get("speedup") and not m.get("warming_up"):
        data.append({"type": "scatter", "x": [gamma], "y": [m["speedup"]], "mode": "markers",
                     "name": tr(lang, "fig.a_measured_speedup", s=f"{m['speedup']:.2f}"), "marker": {"symbol": "diamond", "size": 12,
                                                                               "color": ACCEPT_COLOUR},
                     "xaxis": "x4", "yaxis": "y4"})
    elif gamma and not c:
        data.append({"type": "scatter", "x": [gamma], "y": [m.get("tokens_per_target_call", 0)], "mode": "markers",
                     "name": tr(lang, "fig.a_measured_tpp", m=f"{m.get('tokens_per_target_call', 0):.2f}",
                                e=f"{m.get('expected_tokens_per_target_call', 0):.2f}"),
                     "marker": {"symbol": "diamond", "size": 12, "color": ACCEPT_COLOUR}, "xaxis": "x4", "yaxis": "y4"})
    return data


def analytics_layout(c: float | None, lang: str) -> dict:
    """The four panels' axes, two by two, the legend above them."""
    layout = base_layout(tr(lang, "fig.a_title"), 760, barmode="group",
                     xaxis={"domain": [0, 0.45], "anchor": "y", "title": {"text": tr(lang, "fig.ax_drafts_accepted")}, "dtick": 1},
                     yaxis={"domain": [0.58, 0.92], "anchor": "x", "title": {"text": tr(lang, "fig.ax_steps")}},
                     xaxis2={"domain": [0.55, 1], "anchor": "y2", "title": {"text": tr(lang, "fig.ax_position")}, "dtick": 1},
                     yaxis2={"domain": [0.58, 0.92], "anchor": "x2", "range": [0, 1.05], "title": {"text": tr(lang, "fig.ax_share")}},
                     xaxis3={"domain": [0, 0.45], "anchor": "y3", "title": {"text": tr(lang, "fig.ax_step")}},
                     yaxis3={"domain": [0, 0.42], "anchor": "x3", "rangemode": "tozero"},
                     xaxis4={"domain": [0.55, 1], "anchor": "y4", "title": {"text": "γ"}},
                     yaxis4={"domain": [0, 0.42], "anchor": "x4", "rangemode": "tozero",
                             "title": {"text": tr(lang, "fig.ax_speedup" if c else "fig.ax_tpp")}})
    layout["legend"] = {"orientation": "h", "y": 1.02, "yanchor": "bottom", "x": 0, "font": {"size": 11}}
    layout["margin"] = {"l": 55, "r": 20, "t": 190, "b": 50}
    layout["title"]["y"] = 0.99
    return layout


def sweep_figure(sweep: dict, notation: str = "leviathan", lang: str = "en") -> go.Figure:
    """Acceptance of speculative sampling vs exact-match verification across temperatures."""
    t, d = letters(notation)
    temps = sweep["temperatures"]
    data = [
        {"type": "scatter", "x": temps, "y": sweep["acceptance_rate"], "mode": "lines+markers",
         "name": tr(lang, "fig.s_spec", t=t, d=d), "line": {"color": ACCEPT_COLOUR, "width": 3}},
        {"type": "scatter", "x": temps, "y": sweep["exact_match_of_samples"], "mode": "lines+markers",
         "name": tr(lang, "fig.s_match", t=t, d=d), "line": {"color": REJECT_COLOUR, "dash": "dash"}},
        {"type": "scatter", "x": [0], "y": [sweep["greedy_exact_match"]], "mode": "markers",
         "name": tr(lang, "fig.s_greedy"), "marker": {"symbol": "star", "size": 15, "color": OVERLAP_COLOUR}},
    ]
    return plain_figure(data, base_layout(tr(lang, "fig.s_title", n=sweep["positions"]), 360,
                                 xaxis={"title": {"text": tr(lang, "fig.ax_temperature")}},
                                 yaxis={"range": [0, 1.02], "title": {"text": tr(lang, "fig.ax_mean_acceptance")}}))
