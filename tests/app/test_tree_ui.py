"""The drafts knob through the UI handlers (no browser): a tree step renders every view; bad values are messages."""
from __future__ import annotations

from specviz.app.handlers import step_handler
from specviz.present.views import Session


def _error(view) -> str:
    return view.message if "message-error" in view.message else ""


def test_a_tree_step_renders_every_view(page_settings, pair):
    session, view = step_handler(Session(), page_settings(gamma=3, drafts=3))
    trace = session.traces[-1]
    assert trace.drafts == 3 and not _error(view)
    assert "tree-card" in view.step_card and "k = 3 drafts" in view.step_card and "3. Correct" in view.step_card
    assert "(k = 3 drafts)" in view.narration
    assert len(view.pq.data) >= 3 and len(view.history.data) == 3  # the chain views follow the accepted chain
    assert "acceptance by depth" in view.analytics


def test_drafts_sent_as_none_mean_one_draft(page_settings, pair):
    session, view = step_handler(Session(), page_settings(gamma=3, drafts=None))
    assert session.traces[-1].tree is None and "tree-card" not in view.step_card


def test_bad_drafts_are_messages_naming_the_knobs(page_settings, pair):
    _, view = step_handler(Session(), page_settings(gamma=3, drafts=9))
    assert "drafts must be a whole number in 1..8" in _error(view)
    _, view = step_handler(Session(), page_settings(gamma=3, drafts=2, kl_budget=0.1))
    assert "drafts" in _error(view) and "kl_budget" in _error(view)
