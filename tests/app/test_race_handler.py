"""The race's handler: its values checked as /step's, and refused values echoed as they were sent."""
from __future__ import annotations

import pytest

from specviz.app.handlers import _failure, race_handler
from specviz.present.errors import localize
from specviz.present.views import Session

PROMPT = "KING.\nNow is the time"


@pytest.mark.parametrize("lang", [["en"], {"a": 1}, "fr", None])
def test_a_race_in_a_language_the_page_lacks_is_refused_by_name_and_nothing_runs(lang, page_settings):
    session = Session()
    session, shown, status = race_handler(session, page_settings(prompt=PROMPT, seed=1, max_new_tokens=8, lang=lang))
    assert shown is None and status.error and status.text.startswith("lang must be one of en, zh, ja, not ")
    assert session.races == 0


def test_a_refused_value_with_a_slash_is_echoed_as_it_was_sent():
    status = _failure(ValueError("gamma must be a whole number in 1..16, not '<b>x</b>'"), "en")
    assert "'<b>x</b>'" in status.text


def test_a_server_path_in_a_message_is_still_cut_to_its_name():
    status = _failure(ValueError("No such file: '/srv/secret/models/x.bin'"), "en")
    assert "/srv/secret" not in status.text and "…/x.bin" in status.text


@pytest.mark.parametrize("lang", ["zh", "ja"])
def test_a_refused_race_is_said_in_the_page_language(lang):
    english = ("a race of max_new_tokens 200 with gamma 16 and drafts 8 is predicted to take 95 s, more than this "
               "event has left of its 60 s (SPECVIZ_EVENT_TIMEOUT_S); race fewer new tokens, a smaller gamma or "
               "fewer drafts")
    said = localize(lang, english)
    assert said != english and all(blank in said for blank in ("95", "200", "16", "8", "SPECVIZ_EVENT_TIMEOUT_S"))


def test_a_race_of_the_pages_settings_runs_and_is_counted(pair, page_settings):
    session, shown, status = race_handler(Session(), page_settings(prompt=PROMPT, seed=1, max_new_tokens=8))
    assert 'data-side="target_only"' in shown and not status.error and session.races == 1
