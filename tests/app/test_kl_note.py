"""The KL note under the budget (#kl-buys) and the log scale beside it (#kl-scale) follow what the page holds."""
from __future__ import annotations

import re

import pytest

from specviz.app.handlers import step_handler
from specviz.app.layout import KL_STEPS
from specviz.app.wiring import kl_position
from specviz.present.views import Session, kl_buys


@pytest.mark.parametrize("typed, position", [(0, 0), (0.5, KL_STEPS.index(0.5)), (0.3, KL_STEPS.index(0.2)),
                                             (1.0, len(KL_STEPS) - 1), (7, len(KL_STEPS) - 1), (-1, 0), (None, 0)])
def test_a_typed_budget_moves_the_scale_to_the_largest_step_at_or_below_it(typed, position):
    assert kl_position(typed) == position


def test_the_note_says_what_the_budget_buys_once_a_step_gave_it_a_context(page_settings):
    assert "after the first Step" in kl_buys(Session(), 0.5)
    session, _ = step_handler(Session(), page_settings(kl_budget=0.5, max_new_tokens=8))
    note = kl_buys(session, 0.5)
    text = re.sub(r"<[^>]+>", "", note)
    assert "at KL 0.5" in text, note
    exact, mentored = (float(x) for x in re.findall(r"\d\.\d{3}", text))
    assert 0 <= exact <= mentored <= 1, note  # a budget never buys less acceptance than exact decoding


def test_at_budget_zero_the_note_says_exact_and_runs_no_forward(page_settings, forwards):
    session, _ = step_handler(Session(), page_settings(max_new_tokens=8))
    before = forwards["n"]
    assert "exact speculative sampling (lossless)" in kl_buys(session, 0) and forwards["n"] == before
