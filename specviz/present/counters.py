"""The run's numbers as HTML: the counters (speculative beside target-only, the speed argument a class
reads first), the analytics table under the names vLLM and Leviathan et al. use, and the most rejected tokens.

Plain strings only (no gradio, no plotly), as `render`'s.
"""
from __future__ import annotations

import html

from ..core import theory
from ..core.metrics import MIN_TIMED
from ..core.notation import show
from . import tree_card
from .i18n import tr


def _esc(text: str) -> str:
    return html.escape(show(text))


def _best_with_costs(m: dict, verify_costs: list[float] | None) -> tuple[int, float] | None:
    """(γ, predicted speed-up) of the best γ at the run's α and c with the pair's measured verify costs."""
    if not verify_costs:
        return None
    a, c = m["acceptance_rate"], m["cost_ratio_c"]
    g = theory.optimal_gamma_with_verify_costs(a, c, verify_costs)
    return g, theory.speedup_with_verify_cost(a, g, c, verify_costs[g])


def _drafted(m: dict) -> tuple[float, str]:
    """(drafts a round, positions its target pass covered as shown): γ and γ + 1; under γ auto the means (≈)."""
    if m.get("gamma_auto") and m.get("mean_gamma"):
        return m["mean_gamma"], f"≈{m['mean_gamma'] + 1:.1f}"
    return m["gamma"], str(m["gamma"] + 1)


def speed_reason(m: dict, lang: str = "en", verify_costs: list[float] | None = None, lookup: bool = False) -> str:
    """Why the run is slower than the target alone, or why no γ pays, in the run's own measured numbers: what a
    target pass over γ + 1 positions and a draft forward cost, what a round yields for it, the α above which it
    pays ("" when the run is faster and some γ pays, or while the timings warm up)."""
    if m.get("speedup") is None or m.get("warming_up") or not m.get("verify_cost_in_run"):
        return ""
    a, c, v = m["acceptance_rate"], m["cost_ratio_c"], m["verify_cost_in_run"]
    best = _best_with_costs(m, verify_costs)
    if m["speedup"] >= 1 and (best is None or best[1] >= 1):
        return ""
    tokens = m["tokens_per_target_call"]
    # the round's time outside its forwards (sampling, checking, the trace), in target-only steps as c and V are:
    # with it the round costs tokens / speed-up, so the verdict is the measured one
    host = (m.get("round_host_share") or 0.0) * tokens / m["speedup"] if m["speedup"] > 0 else 0.0
    drafted, positions = _drafted(m)
    g = max(1, round(drafted))  # the break-even of a round of about that many drafts (γ auto's mean)
    cost = drafted * c + v + host
    verdict = tr(lang, "cnt.why_slower" if tokens < cost else "cnt.why_faster")
    lines = [tr(lang, "cnt.why", n=positions, v=f"{v:.2f}", c=f"{c:.2f}", a=f"{a:.2f}", L=f"{tokens:.2f}",
                cost=f"{cost:.2f}", verdict=verdict,
                host=tr(lang, "cnt.why_host", h=f"{host:.2f}") if host >= 0.005 else "")]
    edge = theory.breakeven_alpha(g, c, v + host)
    lines.append(tr(lang, "cnt.why_pays", a=f"{edge:.2f}") if edge is not None else tr(lang, "cnt.why_never", g=g))
    if not lookup:
        lines.append(tr(lang, "cnt.why_lookup"))
    if best is not None and best[1] < 1:
        lines.append(tr(lang, "cnt.why_none", n=len(verify_costs) - 1, g=best[0], s=f"{best[1]:.2f}"))
    elif best is not None and best[0] != g:
        lines.append(tr(lang, "cnt.why_other", g=best[0], s=f"{best[1]:.2f}"))
    return f'<div class="speed-why">{"".join(lines).strip()}</div>'  # English sentences end in their own space


def _measured(m: dict, device: str, lang: str, verify_costs: list[float] | None) -> str:
    """The long speed line: measured, predicted with the run's verify cost, Thm 3.8's limit, the best γ."""
    v = m.get("verify_cost_in_run")
    best = _best_with_costs(m, verify_costs)
    return tr(lang, "cnt.measured", s=f'{m["speedup"]:.2f}', se=f'{m["speedup_stderr"]:.2f}', device=device,
              pred=f'{m["predicted_speedup_in_run"]:.2f}' if v else "—", a=f'{m["acceptance_rate"]:.2f}',
              c=f'{m["cost_ratio_c"]:.2f}', n=_drafted(m)[1], v=f"{v:.2f}" if v else "—",
              thm=f'{m["predicted_speedup_thm38"]:.2f}', best=m["best_gamma"],
              best_measured=tr(lang, "cnt.best_measured", g=best[0]) if best else "")


def counters_html(m: dict, device: str, lossy: bool, baseline_tokens: int, steps: int, lang: str = "en",
                  draft_passes: int | None = None, verify_costs: list[float] | None = None, lookup: bool = False) -> str:
    """Speculative vs target-only, from metrics.metrics(); timings flagged while warming up. The first
    line carries the speed argument (target passes each way, tokens per pass, speedup) for a class, and under
    it, when the run is slower or no γ pays, why in numbers (`speed_reason`).
    `draft_passes`: the draft forwards the run made, where they differ from the tokens drafted (a drafter with
    no model, prompt lookup, makes none); None: one per drafted token. `verify_costs`: the pair's measured curve
    [V(1) = 1, V(2), ...] (None: not measured), for the best γ; `lookup`: the drafter is prompt lookup already."""
    if not steps:
        return f'<div class="counters muted">{tr(lang, "cnt.empty")}</div>'
    badge = f' <span class="badge lossy">{tr(lang, "cnt.lossy")}</span>' if lossy else ""
    warming = m["speedup"] is None or m["warming_up"]
    if warming:
        speed = tr(lang, "cnt.warming_long", need=MIN_TIMED, n=steps)
        short = tr(lang, "cnt.warming", n=min(steps, MIN_TIMED), need=MIN_TIMED)
    else:
        speed = _measured(m, device, lang, verify_costs)
        short = tr(lang, "cnt.speedup", s=f'{m["speedup"]:.2f}', se=f'{m["speedup_stderr"]:.2f}')
    argument = tr(lang, "cnt.argument", spec=m["target_calls"], base=baseline_tokens,
                  tpp=f'{m["tokens_per_target_call"]:.2f}', speed=short)
    rate = (lambda k: f'{m[k]:.0f}' if m[k] else "—")
    alpha = tr(lang, "cnt.alpha", a=f'{m["acceptance_rate"]:.2f}', m=f'{m["mean_acceptance_length"]:.2f}')
    rows = [(tr(lang, "cnt.tokens"), m["tokens"], baseline_tokens),
            (tr(lang, "cnt.target_passes"), m["target_calls"], baseline_tokens),
            (tr(lang, "cnt.draft_passes"), m["draft_calls"] if draft_passes is None else draft_passes, "—"),
            (tr(lang, "cnt.tokens_per_s"), rate("tokens_per_s_speculative"), rate("tokens_per_s_target_only"))]
    body = "".join(f"<tr><td>{a}</td><td><b>{b}</b></td><td>{c}</td></tr>" for a, b, c in rows)
    why = "" if warming else speed_reason(m, lang, verify_costs, lookup)
    return (f'<div class="counters"><div class="speed-argument">{argument}</div>{why}<table><tr><th></th>'
            f'<th>{tr(lang, "cnt.speculative")}</th><th>{tr(lang, "cnt.target_only")}</th></tr>{body}</table>'
            f'<div>{alpha}{badge}</div>'
            f'<div class="speed-long">{speed}</div></div>')


METRIC_ROWS = [  # (metrics key, format); the name is catalogue key metric.<key>, its definition metric.<key>.def
    ("acceptance_rate", "{:.3f}"),
    ("draft_acceptance_rate", "{:.3f}"),
    ("mean_acceptance_length", "{:.2f}"),
    ("system_efficiency", "{:.3f}"),
    ("tokens_per_target_call", "{:.2f}"),
    ("expected_tokens_per_target_call", "{:.2f}"),
]


def metric_row(name: str, value: str, definition: str) -> str:
    return f"<tr><td>{name}</td><td><b>{value}</b></td><td class=muted>{html.escape(definition)}</td></tr>"


def analytics_html(m: dict, lang: str = "en") -> str:
    """The metric set under the names vLLM and Leviathan et al. use (named in brackets), each with its
    definition, in `lang`."""
    if not m.get("steps"):
        return f'<div class="muted">{tr(lang, "dbg.empty")}</div>'
    rows = "".join(metric_row(tr(lang, f"metric.{key}"), fmt.format(m[key]), tr(lang, f"metric.{key}.def"))
                   for key, fmt in METRIC_ROWS)
    per_position = ", ".join(f"{x:.2f}" for x in m["per_position_acceptance"])
    histogram = ", ".join(f"{k}: {n}" for k, n in enumerate(m["acceptance_length_histogram"]))
    rows += (metric_row(tr(lang, "metric.per_position"), per_position, tr(lang, "metric.per_position.def"))
             + metric_row(tr(lang, "metric.histogram"), histogram, tr(lang, "metric.histogram.def"))
             + tree_card.tree_metric_rows(m, lang))
    return f'<table class="analytics">{rows}</table>'


def _most_item(t: dict, lang: str) -> str:
    return tr(lang, "most.item", token=f"<code>{_esc(show(t['token']))}</code>", r=t["rejected"], n=t["n"],
              lo=f"{t['ci_low']:.2f}", hi=f"{t['ci_high']:.2f}")


def most_rejected_html(ranked: list[dict], lang: str = "en") -> str:
    """export.most_rejected's tokens: only those tested often enough for their rate to mean something."""
    from ..core.rejections import MIN_SUPPORT

    if not ranked:
        return f'<div class="muted">{tr(lang, "most.none", n=MIN_SUPPORT)}</div>'
    items = "".join(f"<li>{_most_item(t, lang)}</li>" for t in ranked)
    return (f'<b>{tr(lang, "most.head")}</b> <span class=muted>{tr(lang, "most.support", n=MIN_SUPPORT)}'
            f"</span><ol>{items}</ol>")
