"""The report command and the export round trip on the bundled pair."""
from __future__ import annotations

import csv
import io
import json

import numpy as np
import pytest

from specviz.core.config import DecodeConfig
from specviz.core.metrics import metric_set
from specviz.core.trace import StepRecord
from specviz.engine.decoding.decoders import SpeculativeDecoder
from specviz.present import export
from tests.cli_runner import run_cli


def fitted_line(ms: dict, records: dict, alone: str = "flat") -> list[float]:
    """[intercept, slope] of ms against γ by numpy's least squares, each γ weighted by its rounds; a falling fit
    is the flat line at the weighted mean (host work) or the line through the origin (drafting), and one whose
    intercept falls below 0 the line through the origin (numpy's fit without a constant term)."""
    weights = [len(records[g]) for g in ms]
    slope, intercept = np.polyfit(list(ms), list(ms.values()), 1, w=np.sqrt(weights))
    origin = np.linalg.lstsq(np.sqrt(weights)[:, None] * np.array(list(ms), float)[:, None],
                             np.sqrt(weights) * np.array(list(ms.values())), rcond=None)[0][0]
    if slope < 0:
        return [np.average(list(ms.values()), weights=weights), 0.0] if alone == "flat" else [0.0, origin]
    return [intercept, slope] if intercept >= 0 else [0.0, origin]


def budget_tokens(curve: list[float], budget: int) -> float:
    """Tokens per round of a request of `budget` tokens, its last round cut: the budget over the expected rounds
    to absorption of the chain "tokens still to emit", solved as (I - Q) E = 1 (curve: a_1..a_γ, unconditional)."""
    a = [1.0, *curve]
    law = [a[k - 1] - a[k] for k in range(1, len(a))] + [a[-1]]    # P(a round emits k tokens), k = 1..γ + 1
    q = np.zeros((budget, budget))                                  # state i: i + 1 tokens still to emit
    for i in range(budget):
        for k, p in enumerate(law, 1):
            if i + 1 - k >= 1:
                q[i, i - k] += p
    rounds = np.linalg.solve(np.eye(budget) - q, np.ones(budget))
    return budget / rounds[-1]


def test_report_writes_summary_traces_and_a_self_contained_page(tmp_path):
    prompts = tmp_path / "prompts.txt"
    prompts.write_text("ROMEO.\\nBut soft\nKING.\\nNow is the time\n")
    out = run_cli("report", "--prompts", str(prompts), "--gamma", "3,1", "--runs", "2", "--max-new-tokens", "16",
                  "--top-k", "50", "--out", str(tmp_path / "r"))
    assert out.returncode == 0, out.stderr[-1500:]
    assert "prompt 2/2 run 2/2" in out.stderr and "gamma 1 (2/2)" in out.stderr
    summary = json.loads((tmp_path / "r" / "summary.json").read_text())
    head, *lines = [json.loads(x) for x in (tmp_path / "r" / "traces.jsonl").read_text().splitlines()]
    assert head["specviz_trace"] == 1 and head["prompts"] == ["ROMEO.\nBut soft", "KING.\nNow is the time"]
    assert head["producer"]["device"] == "cpu" and head["settings"]["gammas"] == [3, 1]
    first_gamma = [x for x in lines if x["gamma"] == 3]  # "overall" and "prompts" are the first gamma's
    assert len(summary["prompts"]) == 2 and summary["overall"]["steps"] == len(first_gamma)
    assert summary["settings"]["gammas"] == [3, 1] and summary["settings"]["top_k"] == 50
    # every acceptance figure is what metric_set() gives on the records recomputed from traces.jsonl
    acceptance = ("acceptance_rate", "draft_acceptance_rate", "mean_acceptance_length", "per_position_acceptance",
                  "acceptance_length_histogram", "system_efficiency", "tokens_per_target_call", "steps")
    for gamma in (3, 1):
        records = [StepRecord(**x["record"]) for x in lines if x["gamma"] == gamma]
        expected = json.loads(json.dumps(metric_set(records)))
        assert {k: summary["by_gamma"][str(gamma)][k] for k in acceptance} == {k: expected[k] for k in acceptance}
    first = [StepRecord(**x["record"]) for x in first_gamma if x["prompt_index"] == 0]
    assert summary["prompts"][0]["acceptance_rate"] == metric_set(first)["acceptance_rate"]
    assert {x["run_index"] for x in lines} == {0, 1, 2, 3}  # gamma 1's two runs numbered after gamma 3's
    # the file reads back (each run numbers its steps from 1) and its report gives the same acceptance figures
    from specviz.core.tracefile import read_recording

    assert len(read_recording((tmp_path / "r" / "traces.jsonl").read_text()).runs) == 8  # 2 gammas x 2 prompts x 2 runs
    again = run_cli("report", "--from-traces", str(tmp_path / "r" / "traces.jsonl"), "--out", str(tmp_path / "t"))
    assert again.returncode == 0, again.stderr[-1500:]
    recounted = json.loads((tmp_path / "t" / "summary.json").read_text())
    for gamma in (3, 1):
        assert {k: recounted["by_gamma"][str(gamma)][k] for k in acceptance} == \
            {k: summary["by_gamma"][str(gamma)][k] for k in acceptance}
    for key in acceptance:
        assert key in summary["overall"] and key in summary["prompts"][0]
    assert len(summary["overall"]["acceptance_length_histogram"]) == 4
    # timed against the baseline: every gamma has a speedup; the best is the largest measured
    for m in summary["by_gamma"].values():
        for key in ("speedup", "speedup_stderr", "cost_ratio_c", "predicted_speedup_thm38"):
            assert m[key] is not None and m[key] > 0
    best = summary["best_gamma"]
    assert best["speedup"] == max(m["speedup"] for m in summary["by_gamma"].values())
    assert best["measured"] in (1, 3) and 1 <= best["thm38"] <= 16
    analysis = summary["rejection_analysis"]
    tested = sum(sum(p["uniform"] is not None for p in x["positions"]) for x in lines)
    assert analysis["tested"] == tested == sum(g["n"] for g in analysis["by_token_class"])
    assert all(t["n"] >= analysis["min_support"] for t in analysis["most_rejected"])
    assert analysis["diagnosis"].startswith(("Best γ", "Speculative decoding is slower"))
    assert all("target_entropy" in p for x in lines for p in x["positions"])
    # per request (prompt x run): pooled beside the mean over requests, and the requests' histogram
    for gamma in (3, 1):
        forms = summary["by_gamma"][str(gamma)]["per_request"]
        mine = [StepRecord(**x["record"]) for x in lines if x["gamma"] == gamma]
        assert forms["requests"] == 4 and sum(forms["acceptance_length_histogram"]["counts"]) == 4
        assert forms["alpha_pooled"] == pytest.approx(sum(r.n_accepted for r in mine) / sum(r.n_examined for r in mine))
    assert "acceptance_rate" in summary["definitions"] and summary["conventions"]
    assert summary["whatif"]["table"][0]["gamma"] == 1
    # the verify's measured cost: V(1..9) timed between the runs, in every prediction, Thm 3.8's beside it
    curve = summary["verify_cost"]["curve"]
    assert len(curve) == 9 and curve[0] == 1.0 and len(summary["verify_cost"]["target_pass_ms"]) == 9
    assert summary["verify_cost"]["timed_passes_per_n"] >= 24
    # and the round's host work: per round at each gamma from the traces, the line through them by numpy's fit
    cost = summary["round_cost"]
    records = {g: [StepRecord(**x["record"]) for x in lines if x["gamma"] == g] for g in (3, 1)}
    host_ms = {g: 1e3 * sum(r.step_s - r.draft_s - r.target_s for r in rs) / len(rs) for g, rs in records.items()}
    assert cost["host_ms_line"] == pytest.approx(fitted_line(host_ms, records))
    assert cost["one_pass_ms"] == pytest.approx(summary["verify_cost"]["target_pass_ms"][0])
    assert cost["max_new_tokens"] == 16
    for gamma in (3, 1):
        m = summary["by_gamma"][str(gamma)]
        a, c, v = m["acceptance_rate"], m["cost_ratio_c"], curve[gamma]
        assert m["verify_cost"] == v
        assert m["predicted_speedup_forwards_only"] == pytest.approx(sum(a ** k for k in range(gamma + 1)) / (gamma * c + v))
        assert m["predicted_speedup_thm38"] == pytest.approx(sum(a ** k for k in range(gamma + 1)) / (gamma * c + 1))
        # the pass and the host line over the pooled target-only step (all three timed across the whole report); the
        # line leaves this gamma out, but with two gammas one would be left: all of them then
        share = cost["one_pass_ms"] / cost["target_only_step_ms"]
        host = max(0.0, cost["host_ms_line"][0] + cost["host_ms_line"][1] * gamma) / cost["target_only_step_ms"]
        runs = sorted({x["run_index"] for x in lines if x["gamma"] == gamma})                 # this gamma's two
        lengths = [sum(x["record"]["n_emitted"] for x in lines if x["gamma"] == gamma and x["prompt_index"] == i
                       and x["run_index"] == r) for i in (0, 1) for r in runs]         # each request's own tokens
        assert m["request_tokens"] == lengths
        tokens = sum(lengths) / sum(n / budget_tokens(m["per_position_acceptance"], n) for n in lengths)
        assert m["predicted_speedup"] == pytest.approx(tokens / (gamma * c + share * v + host))
    a, c = best["alpha"], best["cost_ratio_c"]
    by_hand = {g: sum(a ** k for k in range(g + 1)) / (g * c + curve[g]) for g in range(1, 9)}
    assert best["predicted_forwards_only"] == max(by_hand, key=by_hand.get)
    assert best["predicted_curve_forwards_only"] == pytest.approx(list(by_hand.values()))
    depth = np.cumprod(metric_set(records[3] + records[1])["acceptance_by_depth"])  # pooled rates among tested drafts
    step = cost["target_only_step_ms"]
    own = [m["target_ms"] for m in summary["by_gamma"].values()]  # pooled: between the gammas' own steps
    assert min(own) <= step <= max(own)
    drafting = {g: 1e3 * sum(r.draft_s for r in rs) / len(rs) for g, rs in records.items()}  # ms a round
    assert cost["draft_ms_line"] == pytest.approx(fitted_line(drafting, records, alone="proportional"))
    full = {g: budget_tokens(list(depth[:g]) + [depth[-1] * (depth[-1] / depth[-2]) ** k for k in range(1, g - 2)], 16)
            / ((max(0.0, cost["draft_ms_line"][0] + cost["draft_ms_line"][1] * g)
                + max(0.0, cost["host_ms_line"][0] + cost["host_ms_line"][1] * g)) / step
               + cost["one_pass_ms"] / step * curve[g]) for g in range(1, 9)}
    assert best["predicted"] == max(full, key=full.get) and best["predicted_curve"] == pytest.approx(list(full.values()))
    assert summary["whatif"]["verify_costs"] == curve and summary["whatif"]["max_new_tokens"] == 16
    page = (tmp_path / "r" / "report.html").read_text()
    for div in ("per-request-histogram", "pooled-per-request", "conventions", "whatif"):
        assert f"id='{div}'" in page or f'id="{div}"' in page
    wi, said = summary["whatif"], page[page.index("What if: other γ"):]
    assert "γc + 1" not in said      # it priced V, f and h while it said "γc + 1"
    assert f"f {wi['forward_share']:.3f} and h(γ) = {wi['host_cost'][0]:.3f} + {wi['host_cost'][1]:.4f}·γ" in said
    assert "<script src" not in page and page.count("* plotly.js v") == 1  # one inlined bundle, offline
    assert len(page.encode()) < 5_000_000
    assert page.index("id='diagnosis'") < page.index("speedup-by-gamma") < page.index("prompt-panels")


def test_report_gamma_list_errors_are_one_line(tmp_path):
    prompts = tmp_path / "prompts.txt"
    prompts.write_text("ROMEO.\n")
    for bad in ("0", "1,x", "17"):
        out = run_cli("report", "--prompts", str(prompts), "--gamma", bad, "--out", str(tmp_path / "r"))
        assert out.returncode == 2 and out.stderr.startswith("error: ") and "--gamma" in out.stderr
        assert len(out.stderr.strip().splitlines()) == 1


def test_export_round_trip(pair):
    dec = SpeculativeDecoder(pair, "KING.\nNow", DecodeConfig(gamma=4, max_new_tokens=30, seed=5))
    traces = dec.run()
    assert export.read_traces_json(export.traces_json(traces)) == traces
    rows = list(csv.DictReader(io.StringIO(export.tokens_csv(traces))))
    assert len(rows) == sum(len(t.positions) + 1 for t in traces)
    emitted = [r for r in rows if r["verdict"] in ("accepted", "resampled", "bonus")]
    assert [int(r["token_id"]) for r in emitted][: len(dec.generated_ids)] == dec.generated_ids
    rejected = [t for t in traces if t.n_accepted < 4]
    assert len(export.rejections(traces)) == len(rejected)


def _timed(gamma: int, speedup: float, stderr: float | None) -> dict:
    return {"gamma": gamma, "speedup": speedup, "speedup_stderr": stderr}


def test_best_gamma_names_the_gammas_tied_with_it_within_one_standard_error():
    """Run G's shape (docs/benchmarks.md): γ 3 ×1.111 ± 0.032 best, γ 1 ×1.101 ± 0.021 is 0.010 behind, inside
    sqrt(0.032² + 0.021²) = 0.038, so tied; γ 2 ×1.047 ± 0.032 is 0.064 behind, outside sqrt(0.032² + 0.032²) = 0.045."""
    from specviz.tools.report import best_gamma
    by_gamma = {"1": _timed(1, 1.101, 0.021), "2": _timed(2, 1.047, 0.032), "3": _timed(3, 1.111, 0.032),
                "4": _timed(4, 0.881, 0.028)}
    best = best_gamma(by_gamma, {"acceptance_rate": 0.4, "cost_ratio_c": 0.09, "round_host_share": 0.05})
    assert best["measured"] == 3 and best["measured_ties"] == [1]


def test_a_clear_best_gamma_has_no_ties_and_a_missing_error_ties_only_an_equal_speedup():
    from specviz.tools.report import measured_ties
    best = _timed(1, 1.20, 0.01)
    assert measured_ties([best, _timed(2, 1.10, 0.02), _timed(3, 0.90, 0.02)], best) == []
    exact = _timed(1, 1.20, None)
    assert measured_ties([exact, _timed(2, 1.20, None), _timed(3, 1.19, None)], exact) == [2]
