"""The debugging view's what-if and per-request panels (present/debug_panels.py), without models.

A stand-in run carries hand-set metrics and StepRecord-like rounds; the oracles are the formulas written out
by hand (1 + a₁ + … + a_γ, L / (γc + 1), 1 + accepted / rounds, bins of 0.25 from 1), sharing no code with
core.whatif or core.conventions.
"""
from __future__ import annotations

import html
import re
from typing import NamedTuple

import pytest

from specviz.present.debug_panels import debug_panels_view, requests_panel, whatif_panel
from specviz.present.views import KEPT_RUNS, Session


class Rec(NamedTuple):
    gamma: int
    n_accepted: int
    n_examined: int


def rounds(gamma: int, accepted: list[int]) -> list[Rec]:
    return [Rec(gamma, a, min(a + 1, gamma)) for a in accepted]


class StandIn:
    """What the panels read of a ComparedRun: metrics(), traces, timings(), verify_costs(), round_cost()."""

    def __init__(self, metrics: dict, records: list, verify_costs: list[float] | None = None,
                 round_cost: dict | None = None):
        self._metrics, self._records, self._verify_costs = metrics, records, verify_costs
        self._round_cost = round_cost
        self.traces = list(records)  # non-empty: the session counts it as stepped

    def round_cost(self):
        return self._round_cost

    def metrics(self) -> dict:
        return self._metrics

    def verify_costs(self):
        return self._verify_costs

    def timings(self):
        return list(self._records), []


def table_rows(page: str) -> list[tuple]:
    """(gamma, k, length, tokens per pass, speedup, best?, V(γ + 1), Thm 3.8's speedup) of each table row."""
    out = []
    for attrs, cells in re.findall(r"<tr( class=best)?><td>(.*?)</tr>", page):
        values = re.findall(r"[\d.]+", cells.replace("</td><td>", " "))
        out.append((int(values[0]), int(values[1]), float(values[2]), float(values[3]), float(values[5]), bool(attrs),
                    float(values[4]), float(values[6])))
    return out


CURVE = [0.9, 0.72, 0.504]  # conditional 0.9, 0.8, 0.7


def by_hand(gamma: int) -> float:
    a, cond = list(CURVE), 0.504 / 0.72
    while len(a) < gamma:
        a.append(a[-1] * cond)
    return 1 + sum(a[:gamma])


def test_the_table_of_a_run_matches_the_formulas_and_marks_the_best():
    session = Session()
    session.run = StandIn({"steps": 12, "gamma": 3, "per_position_acceptance": CURVE, "cost_ratio_c": 0.2,
                           "warming_up": False}, rounds(3, [3] * 12))
    page, figure, _, _ = debug_panels_view(session, "", "", "1,2,3,5,8", "1", "en")
    rows = table_rows(page)
    assert [r[0] for r in rows] == [1, 2, 3, 5, 8]
    speedups = {}
    for gamma, k, length, tokens, speedup, *_ in rows:
        assert k == 1 and length == pytest.approx(by_hand(gamma), abs=5e-4) and tokens == length
        speedups[gamma] = by_hand(gamma) / (gamma * 0.2 + 1)
        assert speedup == pytest.approx(speedups[gamma], abs=5e-3)
    best = max(speedups, key=speedups.get)
    assert [r[0] for r in rows if r[5]] == [best] and "★" in page
    assert "measured in this run" in page and "0.200" in page
    assert figure.data[-1].x == (best,)  # the starred point


PLANTED_V = [1.0, 1.1, 1.3, 1.45, 1.6, 1.8]  # V(1)..V(6), a CPU-like verify-cost curve


def test_the_pairs_measured_verify_costs_price_each_row_and_thm_3_8_stays_beside():
    """L / (γc + V(γ + 1)) by hand with the planted curve (V(9) extrapolated from its upper half: 1.8 + 3 × 0.5 / 3),
    and Thm 3.8's L / (γc + 1) in its own column."""
    session = Session()
    session.run = StandIn({"steps": 12, "gamma": 3, "per_position_acceptance": CURVE, "cost_ratio_c": 0.2,
                           "warming_up": False}, rounds(3, [3] * 12), verify_costs=PLANTED_V)
    page, figure, _, _ = debug_panels_view(session, "", "", "1,2,3,5,8", "1", "en")
    by_gamma = {r[0]: r for r in table_rows(page)}
    planted = {1: 1.1, 2: 1.3, 3: 1.45, 5: 1.8, 8: 1.8 + 3 * (1.8 - 1.3) / 3}
    for gamma, v in planted.items():
        _, _, length, _, speedup, _, shown_v, thm38 = by_gamma[gamma]
        assert shown_v == pytest.approx(v, abs=5e-3)
        assert speedup == pytest.approx(by_hand(gamma) / (gamma * 0.2 + v), abs=5e-3)
        assert thm38 == pytest.approx(by_hand(gamma) / (gamma * 0.2 + 1), abs=5e-3)
    best = max(planted, key=lambda g: by_hand(g) / (g * 0.2 + planted[g]))
    assert [g for g, r in by_gamma.items() if r[5]] == [best] == [2]  # Thm 3.8 (V = 1) would star γ 3
    assert "measured on this pair here: 1.00, 1.10, 1.30, 1.45, 1.60, 1.80" in page and "2.30*" in page
    assert any("Thm 3.8" in (trace.name or "") for trace in figure.data)


def test_the_runs_host_work_forward_share_and_budget_price_each_row():
    """A run measured 0.6 ms a round outside its forwards over a 3 ms target-only step (h = 0.2 at every γ), a
    one-position pass 2.85 ms (f = 0.95) and 6-token requests: each row's tokens by R(n) = 1 + sum_k P(k) R(n - k)
    by hand, its speed-up over γc + f V(γ + 1) + h; the source line says so."""
    session = Session()
    cost = {"host_ms_line": [0.6, 0.0], "target_only_step_ms": 3.0, "one_pass_ms": 2.85, "forward_share": 0.95,
            "max_new_tokens": 6}
    session.run = StandIn({"steps": 12, "gamma": 3, "per_position_acceptance": CURVE, "cost_ratio_c": 0.2,
                           "warming_up": False}, rounds(3, [3] * 12), verify_costs=PLANTED_V, round_cost=cost)
    page, _, _, _ = debug_panels_view(session, "", "", "1,2", "1", "en")
    by_gamma = {r[0]: r for r in table_rows(page)}
    law = {1: [0.1, 0.9], 2: [0.1, 0.18, 0.72]}  # P(a round emits 1, 2, ... tokens) from CURVE
    for gamma, p in law.items():
        expected = [0.0]
        for n in range(1, 7):
            expected.append(1 + sum(pk * expected[max(0, n - k)] for k, pk in enumerate(p, 1)))
        tokens = 6 / expected[6]
        _, _, length, shown_tokens, speedup, _, _, _ = by_gamma[gamma]
        assert shown_tokens == pytest.approx(tokens, abs=5e-4) and length == pytest.approx(by_hand(gamma), abs=5e-4)
        assert speedup == pytest.approx(tokens / (gamma * 0.2 + 0.95 * PLANTED_V[gamma] + 0.2), abs=5e-3)
    assert "h = 0.20 of a target-only step" in page and "f = 0.95" in page and "its 6 tokens" in page


def test_a_typed_curve_and_cost_replace_the_run():
    page, _ = whatif_panel(None, [], "0.9, 0.72, 0.504", "0.5", "2", "1", "en")
    (row,) = table_rows(page)
    assert row[2] == pytest.approx(2.62) and row[4] == pytest.approx(2.62 / 2, abs=5e-3)
    assert "typed" in page


@pytest.mark.parametrize("curve, cost, gammas, drafts, says", [
    ("1.2", "0.1", "1,2", "1", "per-position acceptance: numbers in [0, 1]"),
    ("abc", "0.1", "1,2", "1", "per-position acceptance: numbers in [0, 1]"),
    (" , ", "0.1", "1,2", "1", "per-position acceptance: give at least one value"),
    ("0.5, 0.7", "0.1", "1,2", "1", "per-position acceptance must not rise"),
    (",".join(["0.5"] * 17), "0.1", "1,2", "1", "per-position acceptance: at most 16 values"),
    ("0.9", "0", "1,2", "1", "cost ratio c: a number > 0"),
    ("0.9", "-1", "1,2", "1", "cost ratio c: a number > 0"),
    ("0.9", "fast", "1,2", "1", "cost ratio c: a number > 0"),
    ("0.9", "0.1", "0,2", "1", "γ values: whole numbers in 1..16"),
    ("0.9", "0.1", "2.5", "1", "γ values: whole numbers in 1..16"),
    ("0.9", "0.1", "", "1", "γ values: give at least one value"),
    ("0.9", "0.1", ",".join(["2"] * 17), "1", "γ values: at most 16 values"),
    ("0.9", "0.1", "1,2", "5", "k (drafts per depth): whole numbers in 1..4"),
    ("0.9", "0.1", "1,2", "2", "k (drafts per depth) above 1 needs"),  # no run: no rejections to predict from
    ("0.9", "x" * 300, "1,2", "1", "cost ratio c: a number > 0"),
    ("0.9" + " " * 300, "0.1", "1,2", "1", "per-position acceptance: at most 200 characters"),
])
def test_bad_settings_give_a_message_naming_the_setting(curve, cost, gammas, drafts, says):
    page, figure = whatif_panel(None, [], curve, cost, gammas, drafts, "en")
    page = html.unescape(page)
    assert "message-error" in page and says in page and "Traceback" not in page
    assert not figure.data  # no stale curve beside the message


def test_no_run_and_nothing_typed_is_a_hint_and_the_cost_needs_measuring():
    page, _ = whatif_panel(None, [], "", "", "1,2", "1", "en")
    assert "message-error" not in page and "Step first" in page
    page, _ = whatif_panel({"steps": 2, "gamma": 2, "per_position_acceptance": [0.5, 0.2], "cost_ratio_c": None},
                           [], "", "", "1,2", "1", "en")
    assert "cost ratio c: not measured yet" in page


def test_a_gamma_auto_runs_curve_is_named_as_one_with_its_later_positions_from_the_confident_rounds():
    run = {"steps": 6, "gamma": 3, "gamma_auto": True, "per_position_acceptance": [0.6, 0.5, 0.5], "cost_ratio_c": 0.1}
    page, _ = whatif_panel(run, [], "", "", "1,2", "1", "en")
    assert "(γ auto, at most 3; 6 steps; a later position counts only the rounds that drafted it" in html.unescape(page)
    page, _ = whatif_panel({**run, "gamma_auto": False}, [], "", "", "1,2", "1", "en")
    assert "(γ 3, 6 steps)" in html.unescape(page)


def test_messages_speak_the_page_language():
    page, _ = whatif_panel(None, [], "1.5", "0.1", "1", "1", "zh")
    assert "各位置接受率" in page and "[0, 1]" in page
    page, _ = whatif_panel(None, [], "0.9", "0", "1", "1", "ja")
    assert "コスト比 c" in page


def test_the_per_request_histogram_counts_a_hand_built_tab():
    runs = [rounds(4, [4, 4, 0]),        # length 1 + 8/3 = 3.667
            rounds(4, [1, 1]),           # 2.0
            rounds(2, [2, 2, 2, 0])]     # 1 + 6/4 = 2.5
    note, figure = requests_panel(runs, "en")
    bars = {trace.name: (list(trace.x), list(trace.y)) for trace in figure.data}
    # γ 4: bins of 0.25 from 1 up to the bin holding 3.667 (the 11th): 2.0 in [2, 2.25), 3.667 in [3.5, 3.75)
    x4, y4 = bars["γ 4"]
    assert len(y4) == 11 and sum(y4) == 2 and y4[4] == 1 and y4[10] == 1 and x4[4] == "2–2.25"
    x2, y2 = bars["γ 2"]
    assert y2 == [0, 0, 0, 0, 0, 0, 1] and x2[-1] == "2.5–2.75"
    # pooled over γ 4's 5 rounds: (8 + 2) / 5 accepted a round; mean over its 2 requests (3.667 + 2) / 2
    row4 = re.search(r"<tr><td>4</td><td>2</td>(.*?)</tr>", note).group(1)
    alpha_pooled, alpha_mean, length_pooled, length_mean = (float(x) for x in re.findall(r"[\d.]+", row4))
    assert length_pooled == pytest.approx(1 + 10 / 5, abs=5e-3)
    assert length_mean == pytest.approx((1 + 8 / 3 + 2.0) / 2, abs=5e-3)
    # tested: run A 4 + 4 + 1, run B 2 + 2
    assert alpha_pooled == pytest.approx(10 / 13, abs=5e-4)
    assert alpha_mean == pytest.approx((8 / 9 + 2 / 4) / 2, abs=5e-4)
    assert "one run" in note


def test_a_sentence_says_when_pooled_and_per_request_rank_the_gammas_differently():
    # γ 4: one long run at length 3 and one short at 1 -> pooled (1 + 20/11) 2.82, mean over requests 2.0;
    # γ 2: two runs at length 2.5 -> 2.5 both ways. Pooled ranks γ 4 first, the mean over requests γ 2.
    runs = [rounds(4, [2] * 10), rounds(4, [0]), rounds(2, [2, 1]), rounds(2, [2, 1])]
    note, _ = requests_panel(runs, "en")
    # α agrees: γ 2 is 3/4 both ways; γ 4 is 20/31 pooled and (20/30 + 0/1) / 2 over requests, lower either way
    said = re.findall(r'<p class="ranking-note">(.*?)</p>', note)
    assert len(said) == 1
    assert "acceptance length: pooled γ 4 (2.818), γ 2 (2.500); mean over requests γ 2 (2.500), γ 4 (2.000)" in said[0]
    agreeing = [rounds(4, [3, 3]), rounds(2, [0, 1])]
    assert "ranking-note" not in requests_panel(agreeing, "en")[0]


def test_a_tab_keeps_its_last_runs_as_requests():
    session = Session()
    for i in range(KEPT_RUNS + 5):
        session.run = StandIn({}, rounds(2, [i % 3]))
        session.keep_run()
    assert len(session.kept_runs) == KEPT_RUNS - 1
    assert [r[0].n_accepted for r in session.kept_runs[-3:]] == [(KEPT_RUNS + 2) % 3, (KEPT_RUNS + 3) % 3,
                                                                  (KEPT_RUNS + 4) % 3]
    *_, note, figure = debug_panels_view(session, "", "", "1", "1", "en")
    assert sum(sum(t.y) for t in figure.data) == KEPT_RUNS  # the kept runs and the current one
    session.release()
    assert session.kept_runs == []


@pytest.mark.parametrize("lang", ["zh", "ja"])
def test_the_panels_carry_no_english_in_zh_and_ja(lang):
    from tests.present.test_i18n_views import english_in, figure_words

    session = Session()
    session.kept_runs = [rounds(3, [1, 3])]
    session.run = StandIn({"steps": 12, "gamma": 3, "per_position_acceptance": CURVE, "cost_ratio_c": 0.2,
                           "warming_up": True}, rounds(3, [3, 0, 2]))
    table, plot, note, histogram = debug_panels_view(session, "", "", "1,2,4", "1", lang)
    for part in (table, note, figure_words(plot), figure_words(histogram)):
        assert english_in(part) == [], part
    for bad in (("1.5", "", "1", "1"), ("0.5, 0.7", "", "1", "1"), ("0.9", "0", "1", "1"), ("0.9", "", "1", "1"),
                ("0.9", "0.1", "99", "1"), ("0.9", "0.1", "1", "9"), ("0.9", "0.1", ",", "1"), ("0.9", "0.1", "1", "2")):
        page, _ = whatif_panel(None, [], *bad, lang)
        assert "message-error" in page and english_in(page) == [], page
    page, _ = whatif_panel(None, [], "", "", "1", "1", lang)
    assert english_in(page) == [], page
