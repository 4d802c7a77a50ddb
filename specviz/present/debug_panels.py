"""Two panels of the debugging view: "what if" (other γ and draft counts from this run's curve) and the
per-request acceptance-length histogram (each run of this tab one request). HTML strings and figures.

The maths is `core.whatif` (acceptance length 1 + a₁ + … + a_γ, speedup over γc + V(γ + 1), V the pair's measured
verify cost from the cost book, with Thm 3.8's V = 1 beside it) and `core.conventions`
(pooled against per request); the figures are `whatif_figures.whatif_figure` and the report's
`report_page.per_request_figure`. Every refused setting is a message naming it and its range.
"""
from __future__ import annotations

import html
import math

import plotly.graph_objects as go

from ..core import round_host, whatif
from ..core.config import GAMMA_MAX, GAMMA_MIN
from ..core.conventions import acceptance_length_histogram, pooled_and_per_request
from ..core.rank_analysis import TRIES_MAX, rank_analysis
from .errors import localize
from .i18n import tr
from .plotting import empty_figure
from .render import Status, message_html
from .report_page import per_request_figure
from .views import KEPT_RUNS, Session, with_lock
from .whatif_figures import whatif_figure

DEFAULT_GAMMAS = "1,2,3,4,5,6,8"
DEFAULT_DRAFTS = "1"
MAX_TEXT = 200            # characters a typed list may have
COST_MAX = 10.0           # c above this is a draft slower than ten targets: refused as a typo


class Refused(ValueError):
    """A typed setting refused: the message is already in the page's language."""


class NoCurve(Refused):
    """Nothing typed and no step yet: a hint, not an error."""


def _shown(text) -> str:
    value = repr(text)
    return value if len(value) <= 60 else value[:60] + "…"


def _items(text, name: str, limit: int, lang: str, example: str) -> list[str]:
    if not isinstance(text, str) or len(text) > MAX_TEXT:
        raise Refused(tr(lang, "wi.err_text", name=name, n=MAX_TEXT, value=_shown(text)))
    items = [x.strip() for x in text.split(",")]
    if not any(items):
        raise Refused(tr(lang, "wi.err_empty", name=name, example=example))
    if len(items) > limit:
        raise Refused(tr(lang, "wi.err_long", name=name, n=limit, m=len(items)))
    return items


def parse_curve(text, lang: str = "en") -> list[float]:
    """A typed per-position curve a₁, a₂, … (vLLM's form): numbers in [0, 1], never rising, at most GAMMA_MAX."""
    name = tr(lang, "wi.n_curve")
    out = []
    for item in _items(text, name, GAMMA_MAX, lang, "0.9, 0.75, 0.6"):
        try:
            value = float(item)
        except ValueError:
            raise Refused(tr(lang, "wi.err_number", name=name, value=_shown(item), range="[0, 1]")) from None
        if not (math.isfinite(value) and 0.0 <= value <= 1.0):
            raise Refused(tr(lang, "wi.err_number", name=name, value=_shown(item), range="[0, 1]"))
        out.append(value)
    for i in range(1, len(out)):
        if out[i] > out[i - 1] + 1e-9:
            raise Refused(tr(lang, "wi.err_rising", name=name, i=i + 1, b=f"{out[i]:g}", a=f"{out[i - 1]:g}"))
    return out


def parse_whole(text, name: str, low: int, high: int, limit: int, lang: str = "en") -> list[int]:
    out = []
    for item in _items(text, name, limit, lang, f"{low},{min(high, low + 1)}"):
        try:
            value = int(item)
        except ValueError:
            value = None
        if value is None or not low <= value <= high:
            raise Refused(tr(lang, "wi.err_whole", name=name, lo=low, hi=high, value=_shown(item)))
        if value not in out:
            out.append(value)
    return out


def parse_cost(text, lang: str = "en") -> float | None:
    """A typed c (None when left empty: the run's measured c)."""
    if text is None or (isinstance(text, str) and not text.strip()):
        return None
    try:
        value = float(text)
    except (TypeError, ValueError):
        value = math.nan
    if not (math.isfinite(value) and 0 < value <= COST_MAX):
        raise Refused(tr(lang, "wi.err_cost", name=tr(lang, "wi.n_cost"), hi=f"{COST_MAX:g}", value=_shown(text)))
    return value


def whatif_inputs(metrics: dict | None, traces: list, curve_text, cost_text, gammas_text, drafts_text,
                  lang: str = "en", verify_costs: list[float] | None = None) -> dict:
    """Everything core.whatif.whatif_table takes, from the typed settings or else the run; Refused names a setting."""
    gammas = parse_whole(gammas_text, tr(lang, "wi.n_gammas"), GAMMA_MIN, GAMMA_MAX, GAMMA_MAX, lang)
    drafts = parse_whole(drafts_text, tr(lang, "wi.n_drafts"), 1, TRIES_MAX, TRIES_MAX, lang)
    steps = (metrics or {}).get("steps") or 0
    if isinstance(curve_text, str) and curve_text.strip():
        curve, source = parse_curve(curve_text, lang), tr(lang, "wi.src_typed")
    elif steps:
        curve = list(metrics["per_position_acceptance"])
        source = tr(lang, "wi.src_run_auto" if metrics.get("gamma_auto") else "wi.src_run", g=metrics["gamma"], n=steps)
    else:
        raise NoCurve(tr(lang, "wi.err_no_curve"))
    cost = parse_cost(cost_text, lang)
    if cost is not None:
        cost_source = tr(lang, "wi.src_c_typed")
    elif steps and metrics.get("cost_ratio_c"):
        cost = metrics["cost_ratio_c"]
        cost_source = tr(lang, "wi.src_c_warming" if metrics.get("warming_up") else "wi.src_c_run")
    else:
        raise Refused(tr(lang, "wi.err_no_cost", name=tr(lang, "wi.n_cost")))
    siblings: list[float] = []
    if max(drafts) > 1:
        analysis = rank_analysis(traces) if traces else {"rejections": 0}
        if not analysis["rejections"]:
            raise Refused(tr(lang, "wi.err_siblings", name=tr(lang, "wi.n_drafts")))
        siblings = analysis["predicted_sibling_acceptance"]
    return {"curve": curve, "source": source, "cost": cost, "cost_source": cost_source, "gammas": gammas,
            "drafts": drafts, "siblings": siblings, "verify_costs": verify_costs}


def _definitions(keys: list[str], lang: str) -> str:
    return '<ul class="wi-defs">' + "".join(f"<li>{tr(lang, k)}</li>" for k in keys) + "</ul>"


def whatif_table_html(result: dict, inputs: dict, lang: str = "en") -> str:
    """The table (one row per γ and k, the best marked ★) under a line saying where the curve and c come from."""
    best = result["best"]
    head = "".join(f"<th>{tr(lang, k)}</th>" for k in ("wi.col_gamma", "wi.col_k", "wi.col_length", "wi.col_tokens",
                                                         "wi.col_verify", "wi.col_speedup", "wi.col_thm38"))
    rows = []
    for r in result["table"]:
        mark = r is best
        guess = "*" if r["verify_cost_extrapolated"] else ""
        tokens = r["acceptance_length"] if r["tokens_per_round"] is None else r["tokens_per_round"]  # the budget's cut
        rows.append(f'<tr{" class=best" if mark else ""}><td>{r["gamma"]}</td><td>{r["drafts"]}</td>'
                    f'<td>{r["acceptance_length"]:.3f}</td><td>{tokens:.3f}</td>'
                    f'<td>{r["verify_cost"]:.2f}{guess}</td><td>×{r["speedup"]:.2f}{" ★" if mark else ""}</td>'
                    f'<td>×{r["speedup_thm38"]:.2f}</td></tr>')
    curve = ", ".join(f"{a:.2f}" for a in result["per_position"])
    siblings = ", ".join(f"{s:.2f}" for s in inputs["siblings"][: max(inputs["drafts"]) - 1])
    source = tr(lang, "wi.source", source=html.escape(inputs["source"]), curve=curve, c=f"{result['cost_ratio_c']:.3f}",
                c_source=html.escape(inputs["cost_source"]))
    if siblings:
        source += " " + tr(lang, "wi.siblings", s=siblings)
    measured = result.get("verify_costs")
    source += " " + (tr(lang, "wi.src_v_measured", n=len(measured), v=", ".join(f"{x:.2f}" for x in measured))
                     if measured else tr(lang, "wi.src_v_none"))
    if result.get("max_new_tokens"):  # the run's round costs were measured (Run.round_cost)
        source += " " + tr(lang, "wi.src_host", h=f"{result['host_cost'][0]:.2f}", f=f"{result['forward_share']:.2f}",
                           n=result["max_new_tokens"])
    best_line = tr(lang, "wi.best", g=best["gamma"], k=best["drafts"], s=f"{best['speedup']:.2f}",
                   L=f"{best['acceptance_length']:.2f}")
    keys = (["wi.def_curve", "wi.def_length", "wi.def_tokens", "wi.def_verify", "wi.def_speedup", "wi.def_thm38"]
            + (["wi.def_k"] if siblings else []))
    return (f'<div class="wi-source">{source}</div><div class="wi-best"><b>{best_line}</b></div>'
            f'<div class="wi-scroll"><table class="analytics whatif-table"><tr>{head}</tr>{"".join(rows)}</table></div>'
            + _definitions(keys, lang) + depth_note_html(lang))


def depth_note_html(lang: str = "en") -> str:
    """Why c on a GPU follows the models' depths, which presets can and cannot gain where (measured or
    predicted, as docs/benchmarks.md says), and what kind of draft would."""
    return (f'<details class="depth-note"><summary>{tr(lang, "depth.title")}</summary>'
            + "".join(f"<p>{tr(lang, k)}</p>" for k in ("depth.why", "depth.presets", "depth.drafts"))
            + "</details>")


def whatif_panel(metrics: dict | None, traces: list, curve_text, cost_text, gammas_text, drafts_text,
                 lang: str = "en", verify_costs: list[float] | None = None,
                 round_cost: dict | None = None) -> tuple[str, go.Figure]:
    """(the table's HTML or a message naming the refused setting, the speedup-by-γ figure); `verify_costs`: the
    pair's measured curve [V(1) = 1, V(2), ...] (None: not measured, every verify priced as one forward);
    `round_cost`: the run's host work, forward share and budget (`Run.round_cost`; None: not measured yet)."""
    try:
        inputs = whatif_inputs(metrics, traces, curve_text, cost_text, gammas_text, drafts_text, lang, verify_costs)
        result = whatif.whatif_table(inputs["curve"], inputs["cost"], inputs["gammas"], inputs["drafts"],
                                     inputs["siblings"], verify_costs=verify_costs, **round_host.as_whatif(round_cost))
    except NoCurve as err:
        return f'<div class="muted">{html.escape(str(err))}</div>', empty_figure(tr(lang, "fig.empty"))
    except Refused as err:
        return message_html(Status("error", str(err))), empty_figure(tr(lang, "wi.fig_empty"))
    except ValueError as err:  # core's own checks (none expected past the ones above): its sentence, framed
        return message_html(Status("error", localize(lang, str(err)))), empty_figure(tr(lang, "wi.fig_empty"))
    return whatif_table_html(result, inputs, lang), whatif_figure(result, lang=lang)




# ------------------------------------------------------------------ per request

def requests_by_gamma(runs: list[list]) -> dict:
    """Runs (each a list of StepRecords) grouped by γ, each group's pooled and per-request forms with the
    histogram of its runs by their own acceptance length (conventions', 0.25 tokens wide)."""
    groups: dict[str, list] = {}
    for records in runs:
        if records:
            groups.setdefault(str(max(r.gamma for r in records)), []).append(records)
    out = {}
    for g, group in groups.items():
        forms = pooled_and_per_request(group)
        out[g] = {"per_request": {**forms, "acceptance_length_histogram":
                                  acceptance_length_histogram(forms["acceptance_length_per_request"])}}
    return out


def requests_panel(runs: list[list], lang: str = "en") -> tuple[str, go.Figure]:
    """(what a request is here, pooled beside per-request figures per γ and their definitions; the histogram)."""
    said = f'<div class="wi-source">{tr(lang, "rq.what", n=KEPT_RUNS)}</div>'
    by_gamma = requests_by_gamma(runs)
    if not by_gamma:
        return said + f'<div class="muted">{tr(lang, "dbg.empty")}</div>', empty_figure(tr(lang, "fig.empty"))
    head = "".join(f"<th>{tr(lang, k)}</th>" for k in ("wi.col_gamma", "rq.col_requests", "rq.col_alpha_pooled",
                                                         "rq.col_alpha_mean", "rq.col_length_pooled",
                                                         "rq.col_length_mean"))
    rows = "".join(f"<tr><td>{g}</td><td>{f['requests']}</td><td>{f['alpha_pooled']:.3f}</td>"
                   f"<td>{f['alpha_mean_over_requests']:.3f}</td><td>{f['acceptance_length_pooled']:.2f}</td>"
                   f"<td>{f['acceptance_length_mean_over_requests']:.2f}</td></tr>"
                   for g, f in sorted(((g, m["per_request"]) for g, m in by_gamma.items()), key=lambda kv: int(kv[0])))
    figure = per_request_figure(by_gamma, title=tr(lang, "rq.fig_title"), x_title=tr(lang, "rq.fig_x"),
                                y_title=tr(lang, "rq.fig_y"), series="γ {g}")
    table = f'<div class="wi-scroll"><table class="analytics requests-table"><tr>{head}</tr>{rows}</table></div>'
    forms = {g: m["per_request"] for g, m in by_gamma.items()}
    return (said + table + ranking_notes(forms, lang)
            + _definitions(["rq.def_length", "rq.def_alpha", "rq.def_pooled"], lang)), figure


def ranking_notes(forms: dict, lang: str) -> str:
    """A sentence for each figure (α, acceptance length) whose pooled form and mean over requests order the
    γ values differently: two honest numbers that would settle an argument in opposite directions."""
    notes = []
    for what, pooled, mean in (("rq.what_alpha", "alpha_pooled", "alpha_mean_over_requests"),
                               ("rq.what_length", "acceptance_length_pooled", "acceptance_length_mean_over_requests")):
        by_pooled, by_mean = (sorted(forms, key=lambda g, k=key: -forms[g][k]) for key in (pooled, mean))
        if len(forms) > 1 and by_pooled != by_mean:
            shown = lambda order, key: ", ".join(f"γ {g} ({forms[g][key]:.3f})" for g in order)
            notes.append(tr(lang, "rq.ranks_differ", what=tr(lang, what), pooled=shown(by_pooled, pooled),
                            mean=shown(by_mean, mean)))
    return "".join(f'<p class="ranking-note">{n}</p>' for n in notes)


def session_runs(session: Session) -> list[list]:
    """The tab's kept runs and the current one, each as its StepRecords (oldest first)."""
    current = session.run.timings()[0] if session.run is not None and session.traces else []
    return [*session.kept_runs, *([current] if current else [])]


@with_lock
def debug_panels_view(session: Session, curve_text, cost_text, gammas_text, drafts_text, lang: str = "en"):
    """(what-if HTML, what-if figure, per-request HTML, per-request figure) of the session's run, in `lang`
    (a typed curve or c replaces the run's)."""
    run = session.run
    metrics = run.metrics() if run is not None and session.traces else None
    verify_costs = run.verify_costs() if run is not None else None
    round_cost = run.round_cost() if metrics is not None else None
    return (*whatif_panel(metrics, session.traces, curve_text, cost_text, gammas_text, drafts_text, lang, verify_costs,
                          round_cost),
            *requests_panel(session_runs(session), lang))
