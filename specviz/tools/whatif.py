"""`python -m specviz whatif`: expected acceptance length and speedup at other gamma and draft counts.

The curve comes from `--per-position` (vLLM's unconditional form: accepted at position i / drafts),
from a report folder (`--from-report DIR`: the largest gamma's per-position acceptance, its measured
cost ratio and, for k > 1, the sibling rates its rank analysis predicts) or from one or two
Prometheus scrapes (`--from-metrics FILE`). The verify's cost V(n) comes from `--verify-cost` (V(1) = 1, V(2),
...), from the report (`--from-report`: the curve it measured), or is measured here for a pair (`--preset`, or
`--draft` and `--target`, on `--device`); without one every verify costs one forward (Thm 3.8's limit), and the
output says so. The maths is `specviz.core.whatif`.
"""
from __future__ import annotations

import json
import math
from pathlib import Path

from ..core import round_host, whatif
from ..core.config import DRAFTS_MAX, DRAFTS_MIN, GAMMA_MAX, GAMMA_MIN, MAX_NEW_TOKENS
from ..core.verify_cost import VERIFY_COST_MAX, check_verify_costs


def parse_rates(flag: str, text: str) -> list[float]:
    try:
        return [float(x) for x in str(text).split(",") if x.strip()]
    except ValueError:
        raise ValueError(f"{flag} takes comma-separated rates in [0, 1] (e.g. 0.9,0.75,0.6), not {text!r}") from None


def parse_whole_list(flag: str, text: str, low: int, high: int) -> list[int]:
    out = []
    for item in str(text).split(","):
        try:
            value = int(item.strip())
        except ValueError:
            value = None
        if value is None or not low <= value <= high:
            raise ValueError(f"{flag} takes whole numbers in {low}..{high} separated by commas, not {text!r}")
        if value not in out:
            out.append(value)
    return out


def curve_from_report(folder: str) -> dict:
    """The largest gamma's unconditional per-position acceptance and cost ratio from a report's summary.json."""
    path = Path(folder) / "summary.json"
    try:
        summary = json.loads(path.read_text(encoding="utf-8"))
        by_gamma = summary["by_gamma"]
    except (OSError, ValueError, KeyError, TypeError) as err:
        raise ValueError(f"--from-report {folder!r} has no readable report summary.json ({err})") from None
    gamma = max(by_gamma, key=int)
    sibling = (summary.get("rank_analysis") or {}).get("predicted_sibling_acceptance") or []
    measured = (summary.get("verify_cost") or {}).get("curve")
    return {"per_position": by_gamma[gamma]["per_position_acceptance"], "cost_ratio": by_gamma[gamma].get("cost_ratio_c"),
            "sibling_rates": sibling, "source": f"report {folder}, γ {gamma} ({by_gamma[gamma]['steps']} steps)",
            "verify_costs": measured, "round_cost": _round_cost(folder, summary.get("round_cost"))}


def _round_cost(folder: str, round_cost) -> dict | None:
    try:
        return round_host.check_round_cost(round_cost)
    except ValueError as err:
        raise ValueError(f"--from-report {folder!r}: {err}") from None


def curve_from_metrics(sources: list[str]) -> dict:
    """vLLM's per-position counters; without them (llama.cpp, SGLang) the i.i.d. curve alpha^i of the mean length."""
    from .report_metrics import metrics_summary, read_scrape

    s = metrics_summary(sources, [read_scrape(x) for x in sources])
    if s.get("per_position_acceptance"):
        return {"per_position": s["per_position_acceptance"], "cost_ratio": None, "sibling_rates": [],
                "source": f"{s['engine']} per-position counters ({s['interval']})"}
    if s.get("alpha") is None or not s.get("gamma"):
        raise ValueError(f"--from-metrics: the {s['engine']} scrape gives no per-position counts and no γ to "
                         "infer them from; give --per-position instead")
    return {"per_position": [s["alpha"] ** i for i in range(1, s["gamma"] + 1)], "cost_ratio": None,
            "sibling_rates": [], "source": f"{s['engine']} mean acceptance length as i.i.d. α {s['alpha']:.3f} ({s['interval']})"}


def cost_ratio_from(cost_ratio: float | None, draft_ms: float | None, target_ms: float | None,
                    fallback: float | None) -> tuple[float, str]:
    if cost_ratio is not None:
        return cost_ratio, "--cost-ratio"
    if draft_ms is not None or target_ms is not None:
        if draft_ms is None or target_ms is None:
            raise ValueError("--draft-ms and --target-ms go together (one draft forward and one target forward, ms)")
        if not (math.isfinite(draft_ms) and math.isfinite(target_ms) and draft_ms >= 0 and target_ms > 0):
            raise ValueError(f"--draft-ms must be >= 0 and --target-ms > 0, not {draft_ms!r} and {target_ms!r}")
        return draft_ms / target_ms, "--draft-ms / --target-ms"
    if fallback is not None:
        return fallback, "measured in the report"
    raise ValueError("whatif needs a cost ratio: --cost-ratio C (draft forward / target forward) or --draft-ms and "
                     "--target-ms")


THM38_LIMIT = "none given: every verify costs one forward (Thm 3.8's limit)"


def verify_costs_from(verify_cost: str | None, pair: dict | None, fallback: list | None,
                      n_max: int) -> tuple[list[float] | None, str]:
    """(the curve [V(1) = 1, V(2), ...] or None, where it came from): --verify-cost, else measured on the pair named,
    else the report's."""
    pair = pair or {}
    if pair.get("device") and not any(pair.get(k) for k in ("preset", "draft", "target")):
        raise ValueError("--device says where to measure V(n) on a pair: name it with --preset (or --draft and --target)")
    if verify_cost is not None and pair:
        raise ValueError("--verify-cost and --preset/--draft/--target each give the verify's cost: give one")
    if verify_cost is not None:
        values = parse_numbers("--verify-cost", verify_cost)
        # a pass over more positions than one costs no less than one over one (a timed curve is clamped so too)
        if out := next(((n, v) for n, v in enumerate(values, 1) if n > 1 and not 1 <= v <= VERIFY_COST_MAX), None):
            raise ValueError(f"--verify-cost: V({out[0]}) must be a number in [1, {VERIFY_COST_MAX:g}] (a target pass "
                             f"over {out[0]} positions costs at least one over one), not {out[1]:g}")
        return check_verify_costs(values, "--verify-cost"), "--verify-cost"
    if pair:
        from ..engine.models.loading import load_pair
        from ..engine.serving.costs import measure_verify_costs

        loaded = load_pair(pair.get("preset"), draft=pair.get("draft"), target=pair.get("target"),
                           device=pair.get("device"))
        return measure_verify_costs(loaded, n_max), f"measured here on {loaded.name or 'the pair'} ({loaded.device})"
    if fallback:
        return check_verify_costs(fallback, "the report's verify_cost"), "measured in the report"
    return None, THM38_LIMIT


def round_costs_from(host_cost: str | None, forward_share: float | None, max_new_tokens: int | None,
                     report: dict | None) -> tuple[dict, str]:
    """(whatif_table's host_cost, forward_share and max_new_tokens, where they came from): each flag given, else
    the report's measured round_cost, else none (no host work, f = 1, no cut)."""
    out = round_host.as_whatif(report)
    said = []
    if host_cost is not None:
        try:
            out["host_cost"] = [float(x) for x in str(host_cost).split(",") if x.strip()]
        except ValueError:
            raise ValueError(f"--host-cost takes one or two numbers >= 0, h0[,h1] (e.g. 0.14,0.013), "
                             f"not {host_cost!r}") from None
        said.append("--host-cost")
    if forward_share is not None:
        out["forward_share"] = forward_share
        said.append("--forward-share")
    if max_new_tokens is not None:
        if not 1 <= max_new_tokens <= MAX_NEW_TOKENS:
            raise ValueError(f"--max-new-tokens must be a whole number in 1..{MAX_NEW_TOKENS}, not {max_new_tokens}")
        out["max_new_tokens"] = max_new_tokens
        said.append("--max-new-tokens")
    if report:
        said.append("measured in the report")
    return out, ", ".join(said) or "none: no host work, a one-position pass = a target-only step, no budget cut"


def parse_numbers(flag: str, text: str) -> list[float]:
    try:
        return [float(x) for x in str(text).split(",") if x.strip()]
    except ValueError:
        raise ValueError(f"{flag} takes comma-separated numbers V(1) = 1, V(2), ... (e.g. 1,1.2,1.35,1.5), "
                         f"not {text!r}") from None


def run_whatif(*, per_position: str | None = None, from_report: str | None = None, from_metrics: list | None = None,
               cost_ratio: float | None = None, draft_ms: float | None = None, target_ms: float | None = None,
               gammas: str = "1,2,3,4,5,6,8", drafts: str = "1", sibling_rates: str | None = None,
               extra_row_cost: float = 0.0, verify_cost: str | None = None, pair: dict | None = None,
               host_cost: str | None = None, forward_share: float | None = None,
               max_new_tokens: int | None = None) -> dict:
    if sum(x is not None and x != [] for x in (per_position, from_report, from_metrics)) != 1:
        raise ValueError("whatif takes exactly one curve: --per-position RATES, --from-report DIR or --from-metrics FILE")
    gamma_list = parse_whole_list("--gammas", gammas, GAMMA_MIN, GAMMA_MAX)
    draft_list = parse_whole_list("--drafts", drafts, DRAFTS_MIN, DRAFTS_MAX)
    if per_position is not None:
        source = {"per_position": parse_rates("--per-position", per_position), "cost_ratio": None,
                  "sibling_rates": [], "source": "--per-position"}
    elif from_report is not None:
        source = curve_from_report(from_report)
    else:
        source = curve_from_metrics(from_metrics)
    c, c_source = cost_ratio_from(cost_ratio, draft_ms, target_ms, source["cost_ratio"])
    siblings = parse_rates("--sibling-rates", sibling_rates) if sibling_rates else source["sibling_rates"]
    curve, v_source = verify_costs_from(verify_cost, pair, source.get("verify_costs"), max(gamma_list) + 1)
    round_costs, h_source = round_costs_from(host_cost, forward_share, max_new_tokens, source.get("round_cost"))
    result = whatif.whatif_table(source["per_position"], c, gamma_list, draft_list, siblings, extra_row_cost, curve,
                                 **round_costs)
    return {**result, "curve_source": source["source"], "cost_ratio_source": c_source, "verify_cost_source": v_source,
            "round_cost_source": h_source,
            "definition": "acceptance_length: expected tokens per round, the resampled or bonus token included "
                          "(= tokens per target pass); per_position: accepted at position i / rounds (vLLM's form); "
                          "verify_cost: V(γ + 1), a target pass over γ + 1 positions / one over one (* where "
                          "extrapolated past the measured curve); host_cost: h(γ), a round's host work in "
                          "target-only steps; tokens_per_round: acceptance_length with each request's last round cut "
                          "at max_new_tokens; speedup: tokens_per_round (else acceptance_length) / (γ c + f V(γ + 1) "
                          "+ h(γ)), f the forward_share; speedup_forwards_only: acceptance_length / (γ c + V(γ + 1)); "
                          "speedup_thm38: the same with V = 1, the limit where a verify costs one forward"}


def whatif_text(result: dict) -> str:
    h0, h1 = result["host_cost"]
    cut = result["max_new_tokens"]
    lines = [f"curve: {result['curve_source']}; c = {result['cost_ratio_c']:.3f} ({result['cost_ratio_source']}); "
             f"verify cost V(n): {result['verify_cost_source']}",
             f"round's host work h = {h0:.3f} + {h1:.4f} gamma target-only steps, forward share f = "
             f"{result['forward_share']:.3f}, budget {cut if cut else 'none'} ({result['round_cost_source']})",
             "gamma  drafts  acceptance_length  tokens/round  V(gamma+1)  h(gamma)  speedup  forwards only  "
             "Thm 3.8 (V = 1)"]
    for r in result["table"]:
        mark = "*" if r["verify_cost_extrapolated"] else " "
        tokens = r["tokens_per_round"] if r["tokens_per_round"] is not None else r["acceptance_length"]
        lines.append(f"{r['gamma']:5d}  {r['drafts']:6d}  {r['acceptance_length']:17.3f}  {tokens:12.3f}  "
                     f"{r['verify_cost']:9.3f}{mark}  {r['host_cost']:8.3f}  {r['speedup']:7.3f}  "
                     f"{r['speedup_forwards_only']:13.3f}  {r['speedup_thm38']:15.3f}")
    b = result["best"]
    lines.append(f"best: gamma {b['gamma']}, drafts {b['drafts']}: x{b['speedup']:.3f} "
                 f"(acceptance length {b['acceptance_length']:.3f}; Thm 3.8's limit x{b['speedup_thm38']:.3f})")
    if any(r["verify_cost_extrapolated"] for r in result["table"]):
        lines.append("* V extrapolated past the measured curve (core.verify_cost)")
    return "\n".join(lines)


def write_plot(result: dict, path: str) -> None:
    from ..present.report_page import figure_div, page
    from ..present.whatif_figures import whatif_figure

    Path(path).write_text(page("specviz whatif", figure_div(whatif_figure(result), "whatif-plot")), encoding="utf-8")
