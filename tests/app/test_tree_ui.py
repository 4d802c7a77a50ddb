"""The drafts knob through the UI handlers (no browser): a tree step renders every view; bad values are messages."""
from __future__ import annotations

from specviz.app.handlers import step_handler
from specviz.present.views import Session

KNOBS = ("shakespeare", "ROMEO.\nBut soft", 3, 1.0, 0, 1.0, 0.0, 0, 40, "", "")  # ... seed, max, draft, target


def _error(view) -> str:
    return view.message if "message-error" in view.message else ""


def test_a_tree_step_renders_every_view(pair):
    session, view = step_handler(Session(), "leviathan", *KNOBS, 3)
    trace = session.traces[-1]
    assert trace.drafts == 3 and not _error(view)
    assert "tree-card" in view.step_card and "k = 3 drafts" in view.step_card and "3. Correct" in view.step_card
    assert "(k = 3 drafts)" in view.narration
    assert len(view.pq.data) >= 3 and len(view.history.data) == 3  # the chain views follow the accepted chain
    assert "acceptance by depth" in view.analytics


def test_old_positional_calls_still_mean_one_draft(pair):
    session, view = step_handler(Session(), "leviathan", *KNOBS)
    assert session.traces[-1].tree is None and "tree-card" not in view.step_card


def test_bad_drafts_are_messages_naming_the_knobs(pair):
    _, view = step_handler(Session(), "leviathan", *KNOBS, 9)
    assert "drafts must be a whole number in 1..8" in _error(view)
    knobs = list(KNOBS)
    knobs[6] = 0.1  # kl_budget
    _, view = step_handler(Session(), "leviathan", *knobs, 2)
    assert "drafts" in _error(view) and "kl_budget" in _error(view)
