"""The page says why in numbers (present/counters.py `speed_reason`): when a run is slower than the target alone, or
no γ pays, the speed line prices a target pass over γ + 1 positions and a draft forward from the run's own measured
figures, in English, Chinese and Japanese; and the run measures the pair's verify-cost curve once its timings count.

The oracle for the break-even α is numpy's polynomial roots, sharing no code with core.theory."""
from __future__ import annotations

import html
import re

import numpy as np
import pytest

from specviz.core.metrics import MIN_TIMED
from specviz.present.counters import counters_html, speed_reason

# the smollm2-local run: γ 4, α 0.33, c 0.09, a pass over 5 positions 1.6 one-position passes, 1.5 tokens a
# round, measured at ×0.73 of the target alone
SLOW = {"gamma": 4, "acceptance_rate": 0.33, "cost_ratio_c": 0.09, "verify_cost_in_run": 1.6,
        "tokens_per_target_call": 1.5, "speedup": 0.73, "speedup_stderr": 0.03, "warming_up": False,
        "predicted_speedup_in_run": 0.76, "predicted_speedup_thm38": 1.09, "best_gamma": 3, "target_calls": 30,
        "mean_acceptance_length": 1.5, "tokens": 45, "draft_calls": 120, "tokens_per_s_speculative": 20.0,
        "tokens_per_s_target_only": 27.0}
SLOW_CURVE = [1.0, 1.2, 1.35, 1.5, 1.6, 1.7, 1.8, 1.9, 2.0]  # V(1..9): γ 1 pays at α 0.33, c 0.09 (1.33 / 1.29)


def breakeven(gamma: int, cost: float) -> float:
    """The α in [0, 1] where 1 + α + … + α^γ = cost, by numpy's roots."""
    roots = np.roots([1.0] * gamma + [1.0 - cost])
    return float(min(r.real for r in roots if abs(r.imag) < 1e-9 and 0 <= r.real <= 1))


def plain(text: str) -> str:
    return html.unescape(re.sub(r"<[^>]+>", "", text))


def test_a_slower_run_says_what_costs_what_in_its_own_numbers():
    line = plain(speed_reason(SLOW, "en"))
    assert ("a target pass over 5 positions costs 1.60 of one; the draft costs 0.09 of one; at α 0.33 a round yields "
            "1.50 tokens for 1.96 passes' worth of time: slower.") in line
    assert f"pays here above α ≈ {breakeven(4, 1.96):.2f}." in line
    assert "Prompt lookup (no draft model) can pay on text to copy." in line


@pytest.mark.parametrize("lang,words", [("zh", ("原因", "更慢", "提示查找")), ("ja", ("理由", "遅くなる", "プロンプトルックアップ"))])
def test_the_line_speaks_chinese_and_japanese_with_the_same_numbers(lang, words):
    line = plain(speed_reason(SLOW, lang, SLOW_CURVE))
    for figure in ("5", "1.60", "0.09", "0.33", "1.50", "1.96", f"{breakeven(4, 1.96):.2f}"):
        assert figure in line, (lang, figure)
    assert all(w in line for w in words)
    assert not re.search(r"\b(the|costs|slower|pays|passes|round)\b", line), line  # no English left


def test_a_run_slowed_by_its_host_work_prices_it_and_its_verdict_is_the_measured_one():
    """γ 4, c 0.09, a pass over 5 positions 1.6: the forwards cost 1.96 passes, for which 2.10 tokens a round would
    be faster; measured ×0.90, the round took 2.10 / 0.90 = 2.33 passes, 16% of it outside the forwards (sampling,
    checking, the trace). The line said "faster" beside a measured ×0.90 when it priced the forwards alone."""
    run = {**SLOW, "tokens_per_target_call": 2.1, "speedup": 0.9, "round_host_share": 0.16}
    host = 0.16 * 2.1 / 0.9
    line = plain(speed_reason(run, "en"))
    assert (f"the draft costs 0.09 of one; the rest of the round (sampling, checking, the trace) costs {host:.2f} of "
            f"one; at α 0.33 a round yields 2.10 tokens for {1.96 + host:.2f} passes' worth of time: slower.") in line
    assert f"{1.96 + host:.2f}" == f"{2.1 / 0.9:.2f}"
    assert f"pays here above α ≈ {breakeven(4, 1.96 + host):.2f}." in line
    for lang, words in (("zh", ("其余工作", "更慢")), ("ja", ("その他の処理", "遅くなる"))):
        said = plain(speed_reason(run, lang))
        assert f"{host:.2f}" in said and f"{1.96 + host:.2f}" in said and all(w in said for w in words), said


def test_under_gamma_auto_the_line_prices_the_rounds_mean_drafting_not_the_longest_round():
    """γ auto drafted 2.4 tokens a round on average, at most 5: a pass over about 3.4 positions and 2.4 draft
    forwards a round (0.22 + 1.6 = 1.82 passes), where the longest round's 5 put "6 positions" and 2.05 on the page."""
    run = {**SLOW, "gamma": 5, "gamma_auto": True, "mean_gamma": 2.4}
    line = plain(speed_reason(run, "en"))
    assert ("a target pass over ≈3.4 positions costs 1.60 of one; the draft costs 0.09 of one; at α 0.33 a round "
            f"yields 1.50 tokens for {2.4 * 0.09 + 1.6:.2f} passes' worth of time: slower.") in line
    page = counters_html(run, "cpu", False, 45, 30, "en", verify_costs=SLOW_CURVE)
    assert "a target pass over ≈3.4 positions costing 1.60 of one" in page


def test_where_a_smaller_gamma_pays_the_line_names_it_and_where_none_does_it_says_so():
    """With the measured curve, γ 1 at α 0.33, c 0.09 yields 1.33 tokens for 0.09 + 1.2 = 1.29 passes: ×1.03."""
    line = plain(speed_reason(SLOW, "en", SLOW_CURVE))
    assert "γ 1 is predicted ×1.03 at this α" in line
    steep = [1.0, 1.5, 1.9, 2.2, 2.5, 2.8, 3.1, 3.4, 3.7]
    line = plain(speed_reason(SLOW, "en", steep))
    assert "no γ from 1 to 8 pays at this α (best: γ 1, ×0.84)" in line


def test_a_faster_run_where_gamma_pays_says_nothing_more_and_nor_does_a_warming_one():
    fast = {**SLOW, "speedup": 1.4, "acceptance_rate": 0.8, "tokens_per_target_call": 3.4}
    assert speed_reason(fast, "en", SLOW_CURVE) == ""
    assert speed_reason({**SLOW, "warming_up": True}, "en") == ""
    assert speed_reason({**SLOW, "speedup": None}, "en") == ""


def test_a_round_that_cannot_pay_at_any_acceptance_says_so_and_prompt_lookup_is_not_suggested_to_itself():
    never = {**SLOW, "gamma": 1, "cost_ratio_c": 0.6, "verify_cost_in_run": 1.5}  # 2 tokens at most for 2.1 passes
    line = plain(speed_reason(never, "en", lookup=True))
    assert "At γ 1 speculation cannot pay at these costs even if every draft were kept." in line
    assert "Prompt lookup" not in line


def test_the_counters_carry_the_line_under_the_speed_argument():
    page = counters_html(SLOW, "cpu", False, 45, 30, "en", verify_costs=SLOW_CURVE)
    assert page.index('class="speed-argument"') < page.index('class="speed-why"') < page.index("<table>")
    assert "predicted ×0.76 for α = 0.33, c = 0.09 and a target pass over 5 positions costing 1.60 of one" in page
    assert "Thm 3.8, where a verify costs one pass, predicts ×1.09; best γ 3 by Thm 3.8, 1 with the measured costs" in page


def test_a_run_measures_the_pairs_verify_curve_once_its_timings_count(pair, page_settings, monkeypatch):
    """Before MIN_TIMED Steps no curve; at the MIN_TIMED-th the Step measures V(1..9) once and says so; the next Step
    measures nothing."""
    from specviz.engine.serving import costs
    from specviz.present.page_settings import settings_from
    from specviz.present.views import Session, step_session

    monkeypatch.setattr(costs, "COSTS", costs.CostBook())  # a fresh process: no curve measured yet
    session, settings = Session(), settings_from(page_settings(seed=5, max_new_tokens=120, gamma=2))
    notes = [step_session(session, settings).text for _ in range(MIN_TIMED + 1)]
    curve = session.run.verify_costs()
    assert len(curve) == 9 and curve[0] == 1.0 and all(v > 0 for v in curve)
    assert all("Measured once for this pair" not in n for n in notes[: MIN_TIMED - 1] + notes[MIN_TIMED:])
    assert "Measured once for this pair" in notes[MIN_TIMED - 1]
    # with the curve, the run's round costs for the what-if panel: its host work a round, the pass's share, its budget
    records, calls = session.run.timings()
    cost = session.run.round_cost()
    host_ms = 1e3 * sum(r.step_s - r.draft_s - r.target_s for r in records) / len(records)
    step_ms = 1e3 * sum(calls) / len(calls)
    assert cost["host_ms_line"] == pytest.approx([host_ms, 0.0]) and cost["target_only_step_ms"] == pytest.approx(step_ms)
    assert cost["forward_share"] == pytest.approx(cost["one_pass_ms"] / step_ms)
    assert cost["max_new_tokens"] == 120 and cost["one_pass_ms"] > 0
