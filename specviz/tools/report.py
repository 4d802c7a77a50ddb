"""`python -m specviz report`: is it faster, at which gamma, and why does the draft get rejected.

For each gamma asked for, every prompt (one per line of a file) runs `runs` times with seeds
0..runs-1 as a `ComparedRun`: the speculative decoder and the target-only baseline on the same
prompt and seed, stepped in the app's fair alternating order, so each gamma gets a measured
speedup. Between the runs, blocks of back-to-back target passes over n = 1..max(8, γ) + 1 positions
measure the verify's cost curve V(n) (`engine.serving.costs.VerifyCostTimer`, spread over the runs so
that drift in the machine's speed hits it and them alike). Writes to --out:
  summary.json   settings, pair, "overall" and "prompts" (the metric set of specviz.core.metrics at
                 the first gamma), "by_gamma" (the metric set per gamma, timings filled, with
                 "predicted_speedup" from its α, c and the measured V(γ + 1) beside Thm 3.8's),
                 "best_gamma" (measured, with the predicted and Thm 3.8's beside it), "verify_cost"
                 (the curve), "rejection_analysis" (with its "diagnosis" in words) and "temperature_sweep";
  traces.jsonl   a trace file (`core.tracefile`): a header line (format version, producer, settings, prompts),
                 then one step trace a line, as `generate --json` prints them, plus prompt_index, run_index;
  report.html    self-contained and offline (one plotly.js inlined): the answer first, then figures.
`--from-metrics` reads a vLLM/SGLang server's Prometheus scrape instead (`specviz.tools.report_metrics`).
Progress goes to stderr.
"""
from __future__ import annotations

import json
import math
import sys
from dataclasses import dataclass, field
from pathlib import Path

from ..core import conventions, rank_analysis, rejections, round_host, theory, tracefile, whatif
from ..core.config import GAMMA_AUTO, GAMMA_MAX, DecodeConfig
from ..core.draft_length import GAMMA_MAX_DEFAULT
from ..core.metrics import metric_set
from ..core.recipe import producer_here
from ..engine.decoding.drafters import check_drafter
from ..engine.decoding.sweep import temperature_sweep
from ..engine.models.loading import load_pair
from ..engine.serving.costs import VerifyCostTimer
from ..engine.serving.run import ComparedRun, RunSettings, WarmRuns
from ..present import diagnosis, report_page
from ..present.share import dtype_text
from .cli_values import parse_gammas  # the command line's parser: report's `gamma` reads the same
from .whatif import THM38_LIMIT


def read_prompts(path: str | Path) -> list[str]:
    """One prompt a line; blank lines skipped; '\\n' inside a line stands for a newline."""
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except OSError as err:
        raise ValueError(f"cannot read the prompts file {str(path)!r}: {err.strerror or err}") from err
    prompts = [line.replace("\\n", "\n") for line in lines if line.strip()]
    if not prompts:
        raise ValueError(f"the prompts file {str(path)!r} has no prompts (one per line)")
    return prompts


def round_costs(by_gamma: dict, pooled: dict, one_pass_s: float | None, max_new_tokens: int) -> dict | None:
    """What the report measured of a round beyond one forward's price (`core.round_host`): its host work and its
    drafting per round at each gamma and the lines through them (ms: a round's first draft forward also reads the
    tokens the last round kept, so c = drafting / γ falls as γ grows), the pooled target-only step, a one-position
    pass's share of it, and the requests' budget; None: nothing timed, or no verify curve (a report from traces)."""
    timed = {int(g): m for g, m in by_gamma.items() if m.get("target_ms") and m.get("steps")}
    if not timed or not one_pass_s or not pooled.get("target_ms"):
        return None
    host_ms = {g: m["round_host_share"] * 1e3 * m["wall_s"] / m["steps"] for g, m in timed.items()}
    draft_ms = {g: m["draft_ms"] * g for g, m in timed.items()}  # a round's drafting: its first forward reads more
    weights = [m["steps"] for m in timed.values()]
    step_ms = pooled["target_ms"]
    return {"host_ms_by_gamma": {str(g): h for g, h in host_ms.items()},
            "host_ms_line": list(round_host.round_line(list(host_ms), list(host_ms.values()), weights)),
            "draft_ms_by_gamma": {str(g): d for g, d in draft_ms.items()},
            "draft_ms_line": list(round_host.round_line(list(draft_ms), list(draft_ms.values()), weights,
                                                        alone="proportional")),
            "rounds_by_gamma": {str(g): m["steps"] for g, m in timed.items()},
            "target_only_step_ms": step_ms, "one_pass_ms": 1e3 * one_pass_s,
            "forward_share": 1e3 * one_pass_s / step_ms, "max_new_tokens": max_new_tokens}


def _host_and_share(costs: dict, gamma: int, left_out: bool = False) -> tuple[float, float]:
    """(h(gamma): the host line's ms, f: a one-position pass's ms, each over the pooled target-only step). Pooled,
    as the line and the pass were measured across the whole report: one gamma's own step, timed in a busier or
    quieter moment, would scale them wrongly (its c is a ratio within its own runs and needs no such care).
    `left_out`: the line through the other gammas' host work (a gamma's own prediction)."""
    step_ms = costs["target_only_step_ms"]
    line = costs["host_ms_line"]
    if left_out:
        by_gamma = costs["host_ms_by_gamma"]
        line = round_host.line_without([int(g) for g in by_gamma], list(by_gamma.values()),
                                       [costs["rounds_by_gamma"][g] for g in by_gamma], gamma)
    return round_host.line_at(line, gamma) / step_ms, costs["forward_share"]


def measured_ties(timed: list[dict], best: dict) -> list[int]:
    """The other gammas whose measured speed-up is within one standard error of the best's (the two errors combined,
    sqrt(se_best² + se_γ²)): where the best gamma is a tie that a rerun may turn either way, so a prediction of any of
    them is as good as the measured argmax."""
    def error(m: dict) -> float:
        return m.get("speedup_stderr") or 0.0
    return sorted(m["gamma"] for m in timed if m is not best
                  and best["speedup"] - m["speedup"] <= math.hypot(error(best), error(m)))


def best_gamma(by_gamma: dict, pooled: dict, verify_costs: list[float] | None = None,
               costs: dict | None = None) -> dict:
    """The gamma of the highest measured speedup; the optimum predicted from the pooled acceptance by depth (the
    rate among tested drafts at each position, every gamma's rounds together), a round's drafting and host work
    from the lines through every gamma's, the measured verify costs V(γ + 1) and the requests' budget
    (γ 1..len(verify_costs) - 1; `with_verify_cost`'s model), that from the pooled α, c and V alone
    (predicted_forwards_only), and Thm 3.8's (V = 1) beside them."""
    timed = [m for m in by_gamma.values() if m.get("speedup") is not None]
    if not timed:
        return {"measured": None, "speedup": None, "speedup_stderr": None, "predicted": None, "thm38": None}
    best = max(timed, key=lambda m: m["speedup"])
    alpha, c = pooled["acceptance_rate"], pooled["cost_ratio_c"]
    thm38 = theory.optimal_gamma(alpha, c, GAMMA_MAX)
    out = {"measured": best["gamma"], "speedup": best["speedup"], "speedup_stderr": best["speedup_stderr"],
           "measured_ties": measured_ties(timed, best),
           "predicted": None, "thm38": thm38, "thm38_speedup": theory.expected_speedup(alpha, thm38, c),
           "thm38_speedup_at_measured": theory.expected_speedup(alpha, best["gamma"], c),
           "alpha": alpha, "cost_ratio_c": c, "round_host_share": pooled["round_host_share"],
           "thm38_curve": [theory.expected_speedup(alpha, g, c) for g in range(1, GAMMA_MAX + 1)]}
    if verify_costs:
        gammas = list(range(1, len(verify_costs)))
        forwards = [theory.speedup_with_verify_cost(alpha, g, c, verify_costs[g]) for g in gammas]
        curve = forwards
        if costs:  # a round's drafting from the line through every gamma's: c falls with gamma (see round_costs)
            depth = whatif.unconditional_from_conditional(pooled["acceptance_by_depth"])
            drafting = [round_host.line_at(costs["draft_ms_line"], g) / costs["target_only_step_ms"] for g in gammas]
            curve = []
            for g in gammas:
                host, share = _host_and_share(costs, g)
                tokens = whatif.tokens_per_round_within(whatif.extend(depth, g), costs["max_new_tokens"])
                curve.append(whatif.speedup(tokens, g, drafting[g - 1] / g, verify_cost=verify_costs[g],
                                            forward_share=share, host_cost=host))
        predicted = max(gammas, key=lambda g: (curve[g - 1], -g))
        by_forwards = max(gammas, key=lambda g: (forwards[g - 1], -g))
        out.update(predicted=predicted, predicted_speedup=curve[predicted - 1], priced_round=bool(costs),
                   predicted_speedup_at_measured=curve[best["gamma"] - 1] if best["gamma"] < len(verify_costs) else None,
                   predicted_curve=curve, predicted_forwards_only=by_forwards,
                   predicted_curve_forwards_only=forwards)
    return out


def with_verify_cost(m: dict, verify_costs: list[float] | None, costs: dict | None = None) -> dict:
    """A gamma's metric set with the measured V(γ + 1) and its predicted speed-up: tokens a round from its
    per-position acceptance with the last round of each request cut at the request's length, over γ c + f V(γ + 1) +
    h(γ) (`core.whatif.speedup`: the round's host work h from the line through the *other* gammas' and f a
    one-position pass, both over the pooled target-only step; c and the acceptance are this gamma's own, as in
    Thm 3.8's figure beside it); predicted_speedup_forwards_only from its α, c and V alone
    (Eq. 1's tokens, no host work); Thm 3.8's (V = 1) is the metric set's; over_prediction: predicted / measured - 1."""
    g = m["gamma"]
    if not verify_costs or m.get("cost_ratio_c") is None or g >= len(verify_costs):
        return {**m, "verify_cost": None, "predicted_speedup": None, "predicted_speedup_forwards_only": None,
                "over_prediction": None}
    forwards = theory.speedup_with_verify_cost(m["acceptance_rate"], g, m["cost_ratio_c"], verify_costs[g])
    extra = {"predicted_tokens_per_round": None, "host_cost": None, "forward_share": None}
    predicted = forwards
    if costs:
        host, share = _host_and_share(costs, g, left_out=True)
        lengths = m.get("request_tokens") or [costs["max_new_tokens"]]  # each request's own: EOS may end it early
        tokens = sum(lengths) / sum(whatif.rounds_to_emit(m["per_position_acceptance"], lengths))
        predicted = whatif.speedup(tokens, g, m["cost_ratio_c"], verify_cost=verify_costs[g], forward_share=share,
                                   host_cost=host)
        extra = {"predicted_tokens_per_round": tokens, "host_cost": host, "forward_share": share}
    return {**m, "verify_cost": verify_costs[g], "predicted_speedup": predicted,
            "predicted_speedup_forwards_only": forwards, **extra,
            "over_prediction": predicted / m["speedup"] - 1 if m.get("speedup") else None}


def auto_summary(auto: dict | None, best: dict) -> dict | None:
    """gamma auto's metric set (its drafted_length_histogram beside the acceptance_length_histogram), and its
    measured speed-up over the best fixed gamma's (None without a fixed gamma measured); None: not run."""
    if auto is None:
        return None
    over = auto["speedup"] / best["speedup"] if auto.get("speedup") and best.get("speedup") else None
    return {**auto, "over_best_fixed": over}


DEFINITIONS = {
    "acceptance_rate": "Leviathan's α: accepted / tested drafts (a draft after its round's first rejection is untested)",
    "draft_acceptance_rate": "vLLM's: accepted / drafted tokens",
    "mean_acceptance_length": "vLLM's: tokens per round, the resampled or bonus token included (= 1 + accepted / rounds "
                              "when no round is cut by EOS or max tokens)",
    "per_position_acceptance": "vLLM's: rounds that accepted position i / rounds (unconditional)",
    "acceptance_length_histogram": "rounds by accepted drafts, 0..γ (bonus token not counted)",
    "drafted_length_histogram": "rounds by drafted tokens, 0..γ: one bar at a fixed γ; under γ auto where drafting "
                                "stopped (gamma_auto: the rounds of --gamma auto, at most --gamma-max drafts)",
    "per_request": "each (prompt, run) is a request: α and acceptance length pooled over its rounds and as the mean of "
                   "the requests' own figures; acceptance_length_histogram bins requests by their own length",
    "eos": "drafts after an accepted EOS are never output and count as neither drafted, tested nor accepted",
    "predicted_speedup": "tokens a round (its per-position acceptance, each request's last round cut at max_new_tokens) "
                         "/ (γ c + f V(γ + 1) + h(γ)): c a draft forward, V the measured verify, f a one-position pass's "
                         "share of a target-only step, h the round's host work (round_cost's line), all in target-only "
                         "steps; predicted_speedup_forwards_only: Eq. 1's tokens at α / (γ c + V(γ + 1)); "
                         "predicted_speedup_thm38: V = 1",
    "round_cost": "a round's time outside its draft and target forwards (warping, the accept test, the residual, the "
                  "trace), measured per round at each γ and fitted as a line h0 + h1 γ in ms; one_pass_ms: a target "
                  "pass over one position; forward_share: it over a target-only step (which pays its own draw)",
}


def per_request_forms(requests: list[list]) -> dict:
    """Pooled and per-request α and acceptance length, and the histogram of requests by acceptance length."""
    forms = conventions.pooled_and_per_request(requests)
    return {**forms, "acceptance_length_histogram": conventions.acceptance_length_histogram(
        forms["acceptance_length_per_request"])}


def report_whatif(by_gamma: dict, sibling_rates: list[float], verify_costs: list[float] | None = None,
                  costs: dict | None = None) -> dict | None:
    """`whatif` on the largest gamma's per-position curve, its measured cost ratio, the measured verify costs and
    round costs (gamma 1..8), for k = 1..4 drafts with the sibling rates the rank analysis predicts (rows free:
    extra_row_cost 0)."""
    if not by_gamma:
        return None
    largest = by_gamma[max(by_gamma, key=int)]
    if not largest["steps"] or largest.get("cost_ratio_c") is None:
        return None
    drafts = list(range(1, len(sibling_rates) + 2))
    result = whatif.whatif_table(largest["per_position_acceptance"], largest["cost_ratio_c"], list(range(1, 9)),
                                 drafts, sibling_rates, verify_costs=verify_costs, **round_host.as_whatif(costs))
    return {**result, "curve_source": f"this report, γ {largest['gamma']} ({largest['steps']} rounds)",
            "verify_cost_source": "measured in this report" if verify_costs else THM38_LIMIT,
            "round_cost_source": "the lines through this report's rounds" if costs else "none measured"}


def _mean_sweep(sweeps: list[dict]) -> dict | None:
    if not sweeps:
        return None
    first = sweeps[0]
    mean = lambda key: [sum(s[key][i] for s in sweeps) / len(sweeps) for i in range(len(first[key]))]
    return {"temperatures": first["temperatures"], "acceptance_rate": mean("acceptance_rate"),
            "exact_match_of_samples": mean("exact_match_of_samples"),
            "greedy_exact_match": sum(s["greedy_exact_match"] for s in sweeps) / len(sweeps),
            "positions": sum(s["positions"] for s in sweeps), "prompts": len(sweeps)}


def run_report(prompts: list[str], out_dir: str | Path, *, preset=None, draft=None, target=None, device=None,
               gamma: int | str | list = 4, temperature: float = 1.0, top_k: int | None = None,
               top_p: float | None = None, runs: int = 1, max_new_tokens: int = 64, kl_budget: float = 0.0,
               drafter: str = "model", gamma_max: int = GAMMA_MAX_DEFAULT, progress=None) -> dict:
    progress = sys.stderr if progress is None else progress  # looked up now: a caller may have redirected it
    # 1. settings, validated before any model loads
    if isinstance(runs, bool) or not isinstance(runs, int) or not 1 <= runs <= 100:
        raise ValueError(f"runs must be a whole number in 1..100, not {runs!r}")
    gammas = parse_gammas(gamma)
    configs = {g: [check_drafter(DecodeConfig.from_knobs(gamma=g, temperature=temperature, top_k=top_k, top_p=top_p,
                                           kl_budget=kl_budget, max_new_tokens=max_new_tokens, seed=run,
                                           drafter=drafter, gamma_max=gamma_max))
                   for run in range(runs)] for g in gammas}
    pair = load_pair(preset, draft=draft, target=target, device=device)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    # 2. every gamma x prompt x run, speculative and target-only side by side
    settings = {"gamma": gammas[0], "gammas": gammas, "gamma_max": gamma_max, "temperature": temperature, "top_k": top_k,
                "top_p": top_p, "kl_budget": kl_budget, "drafter": drafter, "runs": runs, "max_new_tokens": max_new_tokens,
                "prompts": len(prompts)}
    with open(out / "traces.jsonl", "w", encoding="utf-8") as lines:
        producer = producer_here(str(pair.device), dtype_text(pair))
        lines.write(tracefile.header_line(producer, {"preset": pair.name, **settings}, prompts))
        runs_done = run_all(pair, prompts, gammas, configs, lines, progress)
    # 3. the answer: best gamma, where and why it rejects, in words
    summary = report_summary(runs_done, pair, settings)
    (out / "summary.json").write_text(json.dumps(summary, indent=1), encoding="utf-8")
    (out / "report.html").write_text(report_page.report_html(summary, runs_done.panels), encoding="utf-8")
    return summary


@dataclass
class ReportRuns:
    """What the runs gave: metrics by gamma, the first gamma's by prompt, the tested drafts, the traces."""
    by_gamma: dict = field(default_factory=dict)
    rows: list = field(default_factory=list)        # every tested draft (rejections.tested_drafts)
    panels: list = field(default_factory=list)      # (prompt, traces) of each prompt's first run at the first gamma
    sweeps: list = field(default_factory=list)      # the temperature sweep of each of those runs
    all_traces: list = field(default_factory=list)
    primary: dict = field(default_factory=lambda: {"records": [], "calls": [], "prompts": []})  # the first gamma
    pooled_records: list = field(default_factory=list)
    pooled_calls: list = field(default_factory=list)
    verify: VerifyCostTimer | None = None           # the target's passes over 1..n positions, timed between runs


VERIFY_PASSES = 24  # timed target passes per n for the verify-cost curve, spread over the report's runs


def run_all(pair, prompts: list[str], gammas: list[int], configs: dict, lines, progress) -> ReportRuns:
    """Every gamma x prompt x run; each round's trace a line of `lines`; a block of the verify-cost timer after each."""
    done = ReportRuns(verify=VerifyCostTimer(pair, max(8, *(configs[g][0].gamma for g in gammas)) + 1))
    block = -(-VERIFY_PASSES // (len(gammas) * len(prompts) * len(configs[gammas[0]])))
    for gi, g in enumerate(gammas):
        g_records, g_calls, g_requests = [], [], []
        for i, prompt in enumerate(prompts):
            p_records, p_calls = [], []
            for run, config in enumerate(configs[g]):
                # each gamma's runs numbered after the gammas' before it: a trace file's run restarts its steps at 1
                compared, traces = compared_run(pair, prompt, config, lines, i, gi * len(configs[g]) + run)
                done.verify.block(block)
                records, calls = compared.timings()
                g_requests.append(records)
                p_records += records
                p_calls += calls
                done.rows += rejections.tested_drafts(traces, i)
                done.all_traces += traces
                if gi == 0 and run == 0:
                    done.panels.append((prompt, traces))
                    done.sweeps.append(temperature_sweep(pair, compared.tokens))
                m = metric_set(records, calls)
                print(f"gamma {g} ({gi + 1}/{len(gammas)}) prompt {i + 1}/{len(prompts)} run {run + 1}/{len(configs[g])}: "
                      f"{m['steps']} steps, alpha {m['acceptance_rate']:.3f}, speedup {m['speedup'] or 0:.2f}",
                      file=progress, flush=True)
            if gi == 0:
                done.primary["prompts"].append({"prompt_index": i, "prompt": prompt, **metric_set(p_records, p_calls)})
                done.primary["records"] += p_records
                done.primary["calls"] += p_calls
            g_records += p_records
            g_calls += p_calls
        done.by_gamma[str(g)] = {**metric_set(g_records, g_calls), "per_request": per_request_forms(g_requests),
                                 "request_tokens": [sum(r.n_emitted for r in rs) for rs in g_requests]}
        if g != GAMMA_AUTO:  # the fixed gammas' rounds: what the best gamma is predicted from
            done.pooled_records += g_records
            done.pooled_calls += g_calls
    return done


def compared_run(pair, prompt: str, config: DecodeConfig, lines, prompt_index: int, run_index: int):
    """One speculative run and its target-only twin to the end, its traces written to `lines`."""
    compared = ComparedRun(RunSettings(pair.ref, prompt, config, device=str(pair.device)),
                           stateless=False, warm=WarmRuns(1))
    traces = []
    while not compared.finished:
        traces.append(compared.step())
    for trace in traces:
        lines.write(tracefile.step_line(trace, prompt_index, run_index))
    return compared, traces


def report_summary(done: ReportRuns, pair, settings: dict) -> dict:
    """summary.json: the best gamma, where and why the draft is rejected, in words, and every figure behind it."""
    curve = done.verify.curve() if done.verify else None  # a report from traces times no passes
    auto = done.by_gamma.get(GAMMA_AUTO)  # gamma auto's rounds: their own entry, beside the fixed gammas
    fixed = {g: m for g, m in done.by_gamma.items() if g != GAMMA_AUTO}
    pooled = metric_set(done.pooled_records, done.pooled_calls)
    costs = round_costs(fixed, pooled, done.verify.seconds()[0] if done.verify else None, settings["max_new_tokens"])
    by_gamma = {g: with_verify_cost(m, curve, costs) for g, m in fixed.items()}
    best = best_gamma(by_gamma, pooled, curve, costs)
    sweep = _mean_sweep(done.sweeps)
    analysis = rejections.analyse(done.rows)
    auto = auto_summary(auto, best)
    analysis["diagnosis"] = diagnosis.diagnosis_text(analysis, best, sweep, settings["temperature"], auto)
    forms = {f"γ {g}": m["per_request"] for g, m in by_gamma.items()}
    ranking = " ".join(x for x in (
        conventions.ranking_disagreement(forms, "alpha_pooled", "alpha_mean_over_requests", "α"),
        conventions.ranking_disagreement(forms, "acceptance_length_pooled", "acceptance_length_mean_over_requests",
                                         "acceptance length")) if x)
    ranks = rank_analysis.rank_analysis(done.all_traces)
    verify = {"curve": curve, "target_pass_ms": [1e3 * x for x in done.verify.seconds()],
              "timed_passes_per_n": len(done.verify.times[0]), "context_tokens": len(done.verify.context)} \
        if done.verify else None
    return {"whatif": report_whatif(by_gamma, ranks["predicted_sibling_acceptance"], curve, costs),
            "rank_analysis": ranks, "verify_cost": verify, "round_cost": costs,
            "settings": settings,
            "pair": {"name": pair.name, "draft": pair.ref.draft, "target": pair.ref.target, "device": str(pair.device),
                     "dtype": str(pair.dtype).removeprefix("torch."),
                     "draft_dtype": str(pair.draft_dtype).removeprefix("torch."),
                     "target_weights": str(getattr(pair, "target_weights", None) or pair.dtype).removeprefix("torch.")},
            "overall": metric_set(done.primary["records"], done.primary["calls"]), "prompts": done.primary["prompts"],
            "by_gamma": by_gamma, "best_gamma": best, "gamma_auto": auto,
            "rejection_analysis": analysis, "temperature_sweep": sweep,
            "definitions": DEFINITIONS, "conventions": list(conventions.CONVENTIONS), "ranking_note": ranking}
