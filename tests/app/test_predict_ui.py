"""Predict mode's handlers without a browser: a link keeps ?predict=1, Play's tick and an answer move through the
round asked without a model call, a malformed or late click changes nothing; the first live Step after the
opening lesson's round asks a round the class has not seen."""
from __future__ import annotations

import pytest

from specviz.app.handlers import step_handler, tick_handler
from specviz.app.predict_ui import answer_handler, panel_if_changed, switch_handler
from specviz.app.share import link_url
from specviz.present.page_settings import DEFAULT_SEED, PageSettings
from specviz.present.recorded import Playback, first_lesson
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


def test_the_cards_redraw_sends_the_panel_only_when_no_answer_or_switch_drew_it_already():
    """A redraw read before an answer can be delivered after it: one that repeats what the tab was sent is not sent."""
    session, _, panel = switch_handler(Session(), True, "leviathan", lang="en")
    assert panel_if_changed(session, "leviathan", lang="en") is None
    session, _, answered = answer_handler(session, str(session.predict.questions[0].right), "0", "leviathan", lang="en")
    assert answered != panel and panel_if_changed(session, "leviathan", lang="en") is None
    in_japanese = panel_if_changed(session, "leviathan", lang="ja")     # the language changed: the panel follows
    assert in_japanese not in (None, answered) and 'data-state="answered"' in in_japanese
    assert panel_if_changed(session, "leviathan", lang="ja") is None


def test_every_press_of_a_choice_step_or_play_is_sent_and_the_last_follow_up_runs(built_app):
    """The browser draws an event's outputs a moment before it marks the event done; under gradio's default trigger
    mode ("once") a press in that moment is dropped, and a student's "1" pressed the moment its question showed was
    lost. These events send every press ("multiple"); the server takes them in turn and ignores a stale answer. A
    Step's follow-up redraw, skipped so while an earlier one ran, left a page on an older step: the last one is
    deferred instead ("always_last")."""
    ids = {block._id: getattr(block, "elem_id", None) for block in built_app.blocks.values()}
    modes = {(ids.get(target), event): d["trigger_mode"] for d in built_app.config["dependencies"]
             for target, event in d["targets"]}
    assert modes[("predict-panel", "answer")] == "multiple"
    assert modes[("step", "click")] == "multiple"
    assert modes[("play", "click")] == "multiple"
    follow_ups = [d["trigger_mode"] for d in built_app.config["dependencies"]
                  if d["targets"] == [(None, "then")] and built_app.fns[d["id"]].name == "after_step"]
    assert follow_ups == ["always_last", "always_last"]  # a Step's and a tick's: the latest always runs


def lesson_settings(**change) -> PageSettings:
    """The settings the opening lesson was recorded with (the page's defaults), read from its file."""
    return PageSettings(**{**first_lesson().settings, "lang": "en", **change})


def through_the_lesson(predict: bool) -> Session:
    """A tab that opened on the lesson and moved through its round (asked, in predict mode) without a model."""
    session, _, _ = switch_handler(Session(), predict, "leviathan", lang="en")
    while session.predict.open:
        session, _ = step_handler(session, lesson_settings())
    assert session.run is None
    return session


def test_in_predict_mode_the_first_live_step_asks_the_round_after_the_lessons():
    """The live models draw the lesson's round again on its settings (the same seed), so the class would be asked
    what it has just answered: the first Step draws that round and asks the next."""
    session = through_the_lesson(predict=True)
    scored = (session.predict.right, session.predict.asked)
    session, view = step_handler(session, lesson_settings())
    lesson_round = Playback.of(first_lesson()).run.traces[0]
    assert [t.emitted for t in session.traces[:1]] == [lesson_round.emitted]  # drawn live, as recorded
    assert len(session.traces) == 2 and 'data-step="2"' in view.step_card
    assert session.predict.open and session.predict.state == "asking"
    assert (session.predict.right, session.predict.asked) == scored and session.predict.last is None  # it goes on
    assert "drew the lesson&#x27;s round again as step 1" in view.message and "seed 110" in view.message


@pytest.mark.parametrize("predict, change", [(False, {}), (True, {"seed": DEFAULT_SEED + 1})])
def test_otherwise_the_first_live_step_is_round_one(predict, change):
    """Without predict mode the lesson's round drawn live is the point (the recording is the models' own), and on
    other settings round one is new."""
    session, view = step_handler(through_the_lesson(predict), lesson_settings(**change))
    assert len(session.traces) == 1 and 'data-step="1"' in view.step_card
