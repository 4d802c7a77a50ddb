"""Predict mode's handlers without a browser: a link keeps ?predict=1, Play's tick and an answer move through the
round asked without a model call, a malformed or late click changes nothing."""
from __future__ import annotations

from specviz.app.handlers import tick_handler
from specviz.app.predict_ui import answer_handler, switch_handler
from specviz.app.share import link_url
from specviz.present.page_settings import DEFAULT_SEED
from specviz.present.views import Session


def test_a_link_keeps_predict_mode_and_classroom_mode():
    base = "https://example.org/space/?classroom=1&predict=1&lang=en"
    assert link_url(base, "v1.x", "zh", predict=True) == "https://example.org/space/?classroom=1&lang=zh&predict=1#run=v1.x"
    assert link_url(base, "v1.x", "zh", predict=False) == "https://example.org/space/?classroom=1&lang=zh#run=v1.x"
    assert link_url("", "v1.x", "ja", predict=True) == "?lang=ja&predict=1#run=v1.x"


def test_play_and_answers_move_through_the_opening_round_without_a_model(page_settings, forwards):
    session, view, panel = switch_handler(Session(), True, "leviathan", lang="en")
    assert 'data-state="asking"' in panel and "sv-hidden" in view.step_card
    session.playing = True
    session, _, playing = tick_handler(session, page_settings(temperature=0.5, seed=DEFAULT_SEED))
    assert playing and session.predict.state == "shown" and session.run is None
    at = session.predict.at
    for stale in (("0", at - 1), ("9", at), ("next", "x"), ({"x": 1}, at)):
        session, _, _ = answer_handler(session, *stale, "leviathan", lang="en")
        assert (session.predict.at, session.predict.state) == (at, "shown")
    session, _, panel = answer_handler(session, "next", str(at), "leviathan", lang="zh")
    assert session.predict.at == at + 1 and "题" in panel
    assert forwards["n"] == 0
    session, view, panel = switch_handler(session, False, "leviathan", lang="en")
    assert "sv-hidden" not in view.step_card and 'data-state="idle"' in panel
