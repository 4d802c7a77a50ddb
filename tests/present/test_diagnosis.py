"""The diagnosis text from hand-built figures: what it says and what it must not say."""
from __future__ import annotations

from specviz.core import rejections as R
from specviz.present.diagnosis import diagnosis_text


def analysis(accepted=8, rejected=2):
    rows = ([R.TestedDraft(0, 1, " a", "word start", True, 0.3, 0.3, 3.0, 3.0, True)] * accepted
            + [R.TestedDraft(0, 1, " b", "word start", False, 0.3, 0.05, 3.0, 3.0, True)] * rejected)
    return R.analyse(rows)


def sweep(rates):
    return {"temperatures": [0.5, 0.7, 1.0, 1.3, 2.0], "acceptance_rate": rates}


BEST = {"measured": 1, "speedup": 0.9, "speedup_stderr": 0.05, "thm38": 2, "thm38_speedup": 1.3,
        "thm38_speedup_at_measured": 1.2, "alpha": 0.8, "cost_ratio_c": 0.3}


def test_slower_everywhere_is_said_with_the_theorem_beside_it():
    text = diagnosis_text(analysis(), BEST, None, 1.0)
    assert text.startswith("Speculative decoding is slower than the target alone at every γ tried")
    assert "best γ at 2 (×1.30)" in text and "α = 0.80" in text


def test_gamma_auto_faster_than_every_fixed_gamma_is_said_beside_them():
    """A report of γ 4 and γ auto where only auto pays: the fixed γs are said slower, not every γ tried."""
    auto = {"speedup": 1.36, "speedup_stderr": 0.1, "draft_calls": 33, "steps": 22, "over_best_fixed": 1.59}
    text = diagnosis_text(analysis(), BEST, None, 1.0, auto)
    assert text.startswith("Speculative decoding is slower than the target alone at every fixed γ tried")
    assert "γ auto (a draft length that adapts; 1.50 drafted a round): ×1.36 ± 0.10, 1.59 of the best fixed γ's." in text


def test_a_cooler_temperature_that_helps_is_suggested():
    text = diagnosis_text(analysis(), None, sweep([0.9, 0.85, 0.8, 0.82, 0.95]), 1.0)
    assert "T = 0.5 instead of 1" in text and "from 0.80 to 0.90" in text


def test_a_hotter_temperature_is_never_suggested():
    text = diagnosis_text(analysis(), None, sweep([0.7, 0.75, 0.8, 0.9, 0.95]), 1.0)
    assert "instead of" not in text


def test_the_prediction_with_the_measured_verify_cost_is_said_and_the_gap_names_the_rounds_host_work():
    best = {**BEST, "predicted": 1, "predicted_speedup": 1.15, "predicted_speedup_at_measured": 1.15,
            "round_host_share": 0.104}
    text = diagnosis_text(analysis(), best, None, 1.0)
    assert "taking a verify to cost one forward" in text
    assert "With the verify's measured cost (a target pass over γ + 1 positions) the prediction is ×1.15 there" in text
    assert "best γ 1 (×1.15)" in text and "bookkeeping: 10% of a round here" in text
    assert "bookkeeping: " not in diagnosis_text(analysis(), {**best, "predicted_speedup_at_measured": 1.0}, None, 1.0)


def test_a_prediction_that_prices_the_rounds_host_work_says_so_and_blames_the_moment_not_the_model():
    best = {**BEST, "predicted": 1, "predicted_speedup": 1.15, "predicted_speedup_at_measured": 1.15,
            "predicted_forwards_only": 2, "priced_round": True, "round_host_share": 0.104}
    text = diagnosis_text(analysis(), best, None, 1.0)
    assert "and the round's host work (warping, the accept test, the trace: 10% of a round here) the prediction is ×1.15" in text
    assert "although it prices every part of a round" in text and "bookkeeping" not in text
