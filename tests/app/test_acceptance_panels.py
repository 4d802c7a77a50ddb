"""The debugging view's what-if and per-request panels on real runs of the bundled pair, and their wiring."""
from __future__ import annotations

import re

import pytest

from specviz.app.handlers import reset_handler, step_handler
from specviz.present.debug_panels import debug_panels_view
from specviz.present.views import Session


def test_each_run_is_a_request_and_the_table_follows_the_run(page_settings, pair):
    session = Session()
    for _ in range(4):  # T = 1: rejections and bonus tokens
        session, _ = step_handler(session, page_settings(seed=3))
    first = [t.n_accepted for t in session.traces]
    for _ in range(3):  # another seed: a new run, the first one kept as a request
        session, _ = step_handler(session, page_settings(seed=11))
    table, plot, note, histogram = debug_panels_view(session, "", "0.2", "1,2,4", "1,2", "en")
    assert len(session.kept_runs) == 1 and [r.n_accepted for r in session.kept_runs[0]] == first
    assert sum(sum(t.y) for t in histogram.data) == 2 and "<tr><td>4</td><td>2</td>" in note
    curve = session.run.metrics()["per_position_acceptance"]
    rows = re.findall(r"<tr(?: class=best)?><td>(\d+)</td><td>1</td><td>([\d.]+)</td>", table)  # k = 1
    assert [int(g) for g, _ in rows] == [1, 2, 4]
    assert [float(length) for _, length in rows] == pytest.approx([1 + sum(curve[:g]) for g in (1, 2, 4)], abs=5e-4)
    assert any(t.correction.kind == "resampled" for t in session.traces)  # so k = 2 has rejections to predict from
    lines = [t.name for t in plot.data]  # k = 1, k = 2, the star (and Thm 3.8's limit once the pair's V(n) is measured)
    assert "predicted from this run's rejections" in table and lines[:2] == ["k = 1", "k = 2"] and lines[-1] == "best"
    session, _ = reset_handler(session, "leviathan")
    *_, note, histogram = debug_panels_view(session, "", "0.2", "1", "1", "en")
    assert len(session.kept_runs) == 2 and sum(sum(t.y) for t in histogram.data) == 2


def test_the_panels_redraw_after_step_play_and_reset(built_app):
    demo = built_app
    ids = {block._id: getattr(block, "elem_id", None) for block in demo.blocks.values()}
    redraws = [d for d in demo.fns.values() if "whatif-table" in {ids.get(o._id) for o in d.outputs}]
    # the button, Enter in each setting and #lang (one event), then one after Step, one after a tick, one after Reset
    assert len(redraws) == 4 and all(d.api_visibility == "private" for d in redraws)
