"""specviz.present.tree_card: the step card and narration of a step with several drafts."""
from __future__ import annotations

import re

import pytest

from specviz.core.config import DecodeConfig
from specviz.engine.decoding.factory import make_decoder
from specviz.present import render

PROMPT = "KING.\nNow is the time"


@pytest.fixture(scope="module")
def traces(pair):
    dec = make_decoder(pair, PROMPT, DecodeConfig(gamma=3, drafts=4, max_new_tokens=60, seed=2))
    return [dec.step() for _ in range(6)]


def test_card_shows_every_node_every_try_and_the_accepted_path(traces):
    for trace in traces:
        card = render.step_card(trace, "leviathan", len(traces))
        assert 'class="card tree-card"' in card
        assert len(re.findall(r'data-node="\d+"', card)) == len(trace.tree.nodes)
        assert len(re.findall(r'class="try (accepted|rejected)"', card)) == len(trace.tree.tries)
        assert card.count('class="node accepted"') == trace.n_accepted
        rejected = sum(t.verdict == "rejected" for t in trace.tree.tries)
        assert card.count('class="residual"') == rejected  # after each rejected sibling: the new p


def test_a_rejected_sibling_shows_the_residual_the_next_is_judged_against(traces):
    trace = next(t for t in traces if any(x.verdict == "rejected" and x.rank == 0 and
                                          any(y.depth == x.depth and y.rank == 1 for y in t.tree.tries)
                                          for x in t.tree.tries))
    first = next(x for x in trace.tree.tries if x.verdict == "rejected" and x.rank == 0)
    second = next(x for x in trace.tree.tries if x.depth == first.depth and x.rank == 1)
    after = {c.id: c.final_prob for c in first.residual}
    if second.token in after:  # the second try's p(x) is the residual's, not the target's own
        assert second.target_prob == pytest.approx(after[second.token], abs=1e-6)
    text = render.narration(trace)
    assert "becomes norm(max(0, p − q))" in text and f"try {second.rank + 1}" in text


def test_single_draft_card_is_the_chain_card(pair):
    trace = make_decoder(pair, PROMPT, DecodeConfig(gamma=3, max_new_tokens=8)).step()
    card = render.step_card(trace)
    assert "tree-card" not in card and "1. Draft" in card and "2. Verify" in card


def test_debug_metrics_show_acceptance_by_depth_and_rank(traces):
    from specviz.core.metrics import metric_set

    html = render.analytics_html(metric_set([t.record for t in traces]))
    assert "acceptance by depth" in html and "acceptance by sibling rank" in html
