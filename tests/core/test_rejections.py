"""core.rejections on hand-built tested drafts with known answers; the Wilson interval against scipy's."""
from __future__ import annotations

import math

import pytest
import torch
from scipy import stats

from specviz.core import rejections as R
from specviz.core.sampling import entropy


def draft(accepted, position=1, text=" the", prompt=0, q=0.3, p=0.3, h_p=2.0, h_q=2.0, agrees=True, cls="word start"):
    return R.TestedDraft(prompt_index=prompt, position=position, text=text, token_class=cls, accepted=accepted,
                         draft_prob=q, target_prob=p, target_entropy=h_p, draft_entropy=h_q, argmax_agrees=agrees)


@pytest.mark.parametrize("k,n", [(0, 5), (3, 10), (7, 7), (41, 120)])
def test_wilson_matches_scipy(k, n):
    ci = stats.binomtest(k, n).proportion_ci(confidence_level=0.95, method="wilson")
    assert R.wilson(k, n) == pytest.approx((ci.low, ci.high), abs=1e-9)


@pytest.mark.parametrize("text,before,expected", [
    (" the", "ROMEO.", "word start"), ("But", "\n", "word start"), ("But", "", "word start"),
    ("ing", "walk", "word continuation"), ("\n", "x", "whitespace/newline"), (" ", "x", "whitespace/newline"),
    (",", "soft", "punctuation"), (" 16", "in", "digits"), ("3", "2", "digits")])
def test_token_class(text, before, expected):
    assert R.token_class(text, before) == expected


def test_splits_count_tested_drafts_per_group():
    rows = [draft(True, 1), draft(True, 1), draft(False, 1), draft(True, 2), draft(False, 2, prompt=1)]
    a = R.analyse(rows)
    assert [(g["group"], g["n"], g["accepted"]) for g in a["by_position"]] == [(1, 3, 2), (2, 2, 1)]
    assert [(g["group"], g["n"], g["accepted"]) for g in a["by_prompt"]] == [(0, 4, 3), (1, 1, 0)]
    assert a["by_draft_prob"][0]["group"] == "0.3–0.5" and a["by_draft_prob"][0]["n"] == 5


def test_most_rejected_lists_only_tokens_with_enough_support():
    rows = [draft(False, text=" x")] * 4 + [draft(False, text=" y")] * 3 + [draft(True, text=" y")] * 2
    listed = R.most_rejected(rows, min_support=5)
    assert [t["token"] for t in listed] == [" y"]  # " x": 4 of 4 rejected but tested only 4 times
    assert listed[0]["rejected"] == 3 and listed[0]["n"] == 5
    low, high = R.wilson(2, 5)  # rejection interval = 1 - acceptance interval
    assert (listed[0]["ci_low"], listed[0]["ci_high"]) == pytest.approx((1 - high, 1 - low))


def test_findings_name_an_overconfident_draft():
    rows = [draft(False, q=0.8, p=0.02)] * 4 + [draft(False, q=0.2, p=0.1)] * 2 + [draft(True)] * 4
    f = R.findings(rows)
    assert f["overconfident_share"] == pytest.approx(4 / 6) and f["overconfident"]


def test_findings_tell_a_temperature_mismatch_from_a_wrong_draft():
    sharp = [draft(True, h_p=3.0, h_q=1.0, agrees=True)] * 10
    wrong = [draft(False, h_p=3.0, h_q=1.0, agrees=False)] * 10
    assert R.findings(sharp)["temperature_mismatch"] and R.findings(sharp)["draft_sharper"]
    assert R.findings(wrong)["disagrees"] and not R.findings(wrong)["temperature_mismatch"]


def test_entropy_matches_scipy_in_nats():
    probs = torch.tensor([[0.5, 0.25, 0.25, 0.0], [1.0, 0.0, 0.0, 0.0]], dtype=torch.float64)
    assert entropy(probs).tolist() == pytest.approx([stats.entropy([0.5, 0.25, 0.25]), 0.0])
    assert entropy(probs)[0].item() == pytest.approx(1.5 * math.log(2))
