"""A link to a step reproduces it or says why not; a trace file and a lesson open as recordings; the first view
of a fresh tab is the recorded lesson, with no model call."""
from __future__ import annotations

import contextlib
import json
import time
from dataclasses import replace
from pathlib import Path

import pytest

from specviz.app.handlers import reset_handler, step_handler, tick_handler, view_handler
from specviz.app.share import (
    PUBLIC_TRACE_BYTES,
    open_lesson_handler,
    open_link_api,
    open_link_handler,
    open_trace_handler,
    share_handler,
)
from specviz.core.recipe import Producer, decode_recipe, encode_recipe
from specviz.present.recorded import lesson_path, view_of
from specviz.present.share import LINK_SETTINGS
from specviz.present.views import Session

LESSON = Path(lesson_path("typical"))


@pytest.fixture(scope="module")
def stepped(pair):
    """A tab's run of 3 steps on the page's lesson defaults, and its link."""
    from specviz.present.page_settings import PageSettings

    settings = PageSettings(notation="chen", preset="shakespeare", prompt="ROMEO.\nBut soft, what light", gamma=4,
                            temperature=0.5, top_k=0, top_p=1.0, kl_budget=0.0, seed=8, max_new_tokens=80,
                            draft_model="", target_model="")
    session = Session()
    for _ in range(3):
        session, _ = step_handler(session, settings)
    session, link, status = share_handler(session, "chen", "http://example.org/space/?classroom=1&lang=en", lang="ja")
    assert not status.error and link.startswith("http://example.org/space/?classroom=1&lang=ja#run=v1.")
    return session, link


def rounds(session: Session) -> list:
    """Token ids, verdicts and u of every step: what the card shows, read from the traces."""
    return [([e.id for e in t.emitted], [(p.draft_token, p.verdict, p.uniform) for p in t.positions])
            for t in session.traces]


def test_a_link_replays_the_same_tokens_verdicts_and_u_to_its_step(stepped):
    session, link = stepped
    opened, view, settings, status = open_link_handler(Session(), link, lang="ja")
    assert not status.error and "一致" in status.text
    assert rounds(opened) == rounds(session) and len(opened.traces) == 3
    assert settings["seed"] == 8 and settings["notation"] == "chen" and set(settings) == set(LINK_SETTINGS)
    _, shown = view_handler(session, "chen", None, lang="ja")
    assert view.step_card == shown.step_card and view.round_summary == shown.round_summary


def test_a_link_to_an_earlier_step_shows_that_step(stepped):
    session, _ = stepped
    session, _ = view_handler(session, "leviathan", 2, lang="en")
    session, link, _ = share_handler(session, "leviathan", "", lang="en")
    assert link.startswith("?lang=en#run=")  # no page address given: a relative link
    opened, _, _, status = open_link_handler(Session(), link, lang="en")
    assert not status.error and rounds(opened) == rounds(session)[:2]
    session.viewing = None


def _tampered(link: str, **change) -> str:
    recipe = decode_recipe(link, LINK_SETTINGS)
    return encode_recipe(replace(recipe, **change))


def test_a_changed_digest_is_refused_as_not_the_same_run(stepped):
    _, link = stepped
    changed = _tampered(link, digest="0123456789abcdef")
    _, view, settings, status = open_link_handler(Session(), changed, lang="en")
    assert status.error and "Not the same run" in status.text and "0123456789abcdef" in status.text
    assert "same versions and device" in status.text


def test_a_link_from_another_version_names_what_differs(stepped):
    _, link = stepped
    recipe = decode_recipe(link, LINK_SETTINGS)
    other = Producer(**{**recipe.producer.__dict__, "torch": "2.0.0", "device": "cuda"})
    _, _, _, status = open_link_handler(Session(), _tampered(link, producer=other, digest="f" * 16), lang="en")
    assert status.error and "torch" in status.text and "2.0.0 in the recording" in status.text
    assert "device cuda" not in status.text and "in the recording" in status.text


# A link made by specviz 0.1.0 (main at f4d0085, 2026-11-27), before the round's last token was drawn by an exponential
# race: the page's settings of then (seed 35), 3 steps, tokens [[83, 319, 31], [199, 199, 59, 36, 2688], ...]
LINK_BEFORE_THE_RACE = (
    "?lang=en#run=v1.eNpNkE9rwzAMxb9K0XWpcZx2HT4OdhyFnQfBjZU_JLGNrbTbSr_75ITBbtZP7_lJusMVdFlAQqLBdQn0HZwnQ4N3oGHC62CoNw4KCB"
    "FZxTD1ZsQU0ERcsZ9Dxh_n97ez-HSvC-2Sb6nY3XpDu2noemJdZ-bZgD4UQDgHjIYW9mspjkx8qEfQbpmmrQh_xTjVl8V2OVcKmedEC7piz2y-aoe3mvyIjud-4a6N"
    "pqV69hYnHohDyUT2_ierJK07r0-MzLf-g78n5OiKe0OHKW-ljocTqlKd1EVW6qC2je3SZOMd-AzNdfhhoRSlkDnSx6bPRlFWQj41YckwGpdaH2eMnA1HoapVbPm-DV8"
    "BNpml75CrdvKGqpxlDWWgpHrel-VeneDx-AUS54hP")


def test_a_link_from_before_the_exponential_race_says_the_specviz_version_differs(pair):
    """The decision now draws other tokens for a seed: an old link replays to other tokens and names specviz's
    version, not "the same versions" (which would blame the models)."""
    recipe = decode_recipe(LINK_BEFORE_THE_RACE, LINK_SETTINGS)
    assert recipe.producer.specviz == "0.1.0" and recipe.settings["seed"] == 35
    opened, _, _, status = open_link_handler(Session(), LINK_BEFORE_THE_RACE, lang="en")
    assert status.error and "Not the same run" in status.text and len(opened.traces) == 3
    assert "specviz 0.2.0 here, 0.1.0 in the recording" in status.text and "same versions" not in status.text


def test_a_cut_or_wrong_version_link_is_a_message_and_nothing_runs(stepped, forwards):
    _, link = stepped
    for bad, said in ((link[:-20], "cut"), (link.replace("#run=v1.", "#run=v7."), "format v7")):
        _, view, settings, status = open_link_handler(Session(), bad, lang="en")
        assert status.error and said in status.text and settings is None
    assert forwards["n"] == 0


def test_a_link_cannot_load_a_pair_the_deployment_does_not_offer(stepped, monkeypatch, forwards):
    monkeypatch.setenv("SPACE_ID", "someone/specviz")
    monkeypatch.setenv("SPECVIZ_PRESETS", "shakespeare")
    loads = []
    monkeypatch.setattr("specviz.engine.models.loading.load_pair", lambda *a, **k: loads.append(a))
    recipe = decode_recipe(stepped[1], LINK_SETTINGS)
    for settings in ({"preset": "gpt2"}, {"draft_model": "/etc", "target_model": "/etc"}):
        link = encode_recipe(replace(recipe, settings={**recipe.settings, **settings}))
        _, _, chosen, status = open_link_handler(Session(), link, lang="en")
        assert status.error and chosen is None and ("not offered" in status.text or "own" in status.text), status
    assert loads == [] and forwards["n"] == 0


def test_the_api_replays_a_link_and_names_a_bad_one(stepped):
    _, link = stepped
    result = open_link_api(link, "en")
    assert result["ok"] and result["step"] == 3 and 'data-step="3"' in result["step_card"]
    bad = open_link_api("v1.abc", "xx")
    assert not bad["ok"] and "lang must be one of" in bad["message"]


def test_a_fresh_tab_shows_the_recorded_lesson_without_a_model_call(forwards):
    view = view_of(Session(), "leviathan")
    assert "recorded on cpu" in view.step_card and "lesson-note" in view.round_summary
    assert 'data-step="1"' in view.step_card and forwards["n"] == 0
    zh = view_of(Session(), "leviathan", lang="zh")
    assert "录制于" in zh.step_card and "第 1 课" in zh.round_summary


def test_the_pages_first_paint_is_the_lesson(forwards):
    from specviz.app.wiring import build_app

    demo = build_app()
    card = next(b for b in demo.blocks.values() if getattr(b, "elem_id", None) == "step-card")
    assert "recorded on" in card.value and forwards["n"] == 0


def test_a_language_redraw_sent_before_the_pages_link_is_read_leaves_the_card_to_the_link(built_app, stepped):
    """One load event sets #lang and the link; #lang's redraw and the link's replay then run side by side. A lesson
    card the redraw drew before the replay reached the browser after the link's card and covered it (seen once in a
    full run, and every time with the redraw delayed 3 s). While a link is on its way the redraw leaves the views to
    the link's event, which draws them in the page's language; once the link was read it redraws them as before."""
    ids = {block._id: getattr(block, "elem_id", None) for block in built_app.blocks.values()}
    loads = [[ids[i] for i in d["outputs"]] for d in built_app.config["dependencies"]
             if any(event == "load" for _, event in d["targets"])]
    assert [outputs for outputs in loads if "share-open" in outputs] == [["lang", "classroom", "predict", "share-open",
                                                                         "page-url"]]
    on_lang = next(f.fn for f in built_app.fns.values() if f.name == "on_lang")
    card = next(b for b in built_app.blocks.values() if getattr(b, "elem_id", None) == "step-card")
    _, link = stepped
    pending = on_lang(Session(), "leviathan", None, "ja", "Play", link)
    assert pending[card] == {"__type__": "update"}  # gradio's skip: the card stays for the link to draw
    opened, _, _, _ = open_link_handler(Session(), link, lang="ja")
    after = on_lang(opened, "leviathan", None, "ja", "Play", link)
    assert 'data-step="3"' in after[card] and "ステップ" in after[card]
    without = on_lang(Session(), "leviathan", None, "ja", "Play", "")
    assert "recorded-card" in without[card] and "ステップ" in without[card]  # the lesson, redrawn in Japanese


def test_a_trace_file_opens_and_step_play_and_view_step_move_through_it(page_settings, forwards):
    text = LESSON.read_text(encoding="utf-8")
    total = len(text.splitlines()) - 1
    session, view = open_trace_handler(Session(), text, "leviathan", lang="en")
    assert "Opened a recording" in view.message and 'data-step="1"' in view.step_card
    session, view = step_handler(session, page_settings())
    assert 'data-step="2"' in view.step_card and "recorded on" in view.counters
    session, view = view_handler(session, "leviathan", total, lang="en")
    assert f'data-step="{total}"' in view.step_card
    session.playing = True
    session, view, playing = tick_handler(session, page_settings())
    assert not playing and "ends at step" in view.message  # Play stops at the recording's end
    session, view = view_handler(session, "leviathan", total + 1, lang="en")
    assert "must be a whole number in 1.." in view.message
    assert forwards["n"] == 0
    session, view = reset_handler(session, "leviathan")
    assert session.recorded is None


def test_a_lesson_opens_from_the_menu(page_settings):
    session, view = open_lesson_handler(Session(), "greedy", "leviathan", lang="ja")
    assert "レッスン 2" in view.round_summary and session.recorded.total == 5
    session, view = open_lesson_handler(Session(), "../../etc/passwd", "leviathan", lang="en")
    assert "not recorded on this server" in view.message and session.recorded is None


def test_a_public_servers_trace_is_bounded_in_bytes_and_steps(monkeypatch):
    monkeypatch.setenv("SPACE_ID", "someone/specviz")
    lines = LESSON.read_text(encoding="utf-8").splitlines()
    big = "\n".join([lines[0]] + lines[1:] * (PUBLIC_TRACE_BYTES // len("".join(lines[1:])) + 1))
    session, view = open_trace_handler(Session(), big, "leviathan", lang="en")
    assert f"over the {PUBLIC_TRACE_BYTES:,} bytes" in view.message and session.recorded is None
    step = json.loads(lines[1])
    small = {**step, "positions": [], "correction": {**step["correction"], "candidates": [], "residual_probs": []}, "step": 1,
             "record": None}
    many = "\n".join(json.dumps({**small, "run_index": i}) for i in range(1001))
    assert len(many) < PUBLIC_TRACE_BYTES
    session, view = open_trace_handler(Session(), many, "leviathan", lang="en")
    assert "over the 1,000 allowed" in view.message and session.recorded is None
    session, view = open_trace_handler(Session(), '{"too_large_bytes": 99999999}', "leviathan", lang="en")
    assert "99999999 bytes" in view.message


def test_a_tabs_export_opens_as_a_recording_of_its_device_with_its_race(page_settings, tmp_path, forwards):
    from specviz.app.handlers import race_handler
    from specviz.present.recorded import race_view
    from specviz.present.views import export_files

    settings = page_settings(prompt="ROMEO.\nBut soft", seed=4, max_new_tokens=12)
    session = Session()
    for _ in range(2):
        session, _ = step_handler(session, settings)
    session, _, status = race_handler(session, settings)
    assert not status.error
    raced = session.race
    path, _, data = export_files(session, str(tmp_path))
    text = Path(path).read_text(encoding="utf-8")
    head = json.loads(text.splitlines()[0])
    assert head["producer"]["device"] == "cpu" and head["settings"]["seed"] == 4 and len(data) == 2
    assert [t["target_only"]["texts"] for t in [head["race"]]] == [list(raced.target_only.texts)]
    before = forwards["n"]
    opened, view = open_trace_handler(Session(), text, "leviathan", lang="en")
    assert "recorded on cpu" in view.step_card and "(the file does not say" not in view.step_card
    shown = race_view(opened, "en")
    assert "recorded on cpu" in shown and shown.count('data-ms="') == (
        len(raced.target_only.texts) + len(raced.speculative.texts))
    assert forwards["n"] == before  # opening the file ran no model


def test_a_tabs_own_race_is_redrawn_in_the_language_switched_to(page_settings, forwards):
    from specviz.app.handlers import race_handler
    from specviz.present.recorded import race_view

    session, _ = step_handler(Session(), page_settings(prompt="ROMEO.\nBut soft", seed=4, max_new_tokens=8))
    session, shown, status = race_handler(session, page_settings(prompt="ROMEO.\nBut soft", seed=4, max_new_tokens=8))
    assert not status.error and "Replay" in shown
    before = forwards["n"]
    chinese = race_view(session, "zh")
    assert "重播" in chinese and "Replay" not in chinese and "recorded on" not in chinese
    assert chinese.count('data-ms="') == shown.count('data-ms="') == (
        len(session.race.target_only.texts) + len(session.race.speculative.texts))
    assert forwards["n"] == before  # redrawn from the race kept, not raced again


def test_the_pages_first_paint_includes_the_lessons_recorded_race(forwards):
    from specviz.app.wiring import build_app

    demo = build_app()
    race = next(b for b in demo.blocks.values() if getattr(b, "elem_id", None) == "race")
    assert "recorded on" in race.value and 'data-side="speculative"' in race.value and forwards["n"] == 0


def heavy_link(link: str, **settings) -> str:
    """The attack of issue 48 on the bundled pair: γ 16, 8 drafts, 200 new tokens at T 1.5, step 100,000."""
    recipe = decode_recipe(link, LINK_SETTINGS)
    heavy = {**recipe.settings, "gamma": 16, "drafts": 8, "max_new_tokens": 200, "temperature": 1.5, **settings}
    return encode_recipe(replace(recipe, settings=heavy, step=100_000))


@pytest.fixture
def public_event(monkeypatch):
    """A public server whose events may run `seconds`."""
    def set_limit(seconds: int):
        monkeypatch.setenv("SPACE_ID", "someone/specviz")
        monkeypatch.setenv("SPECVIZ_PRESETS", "shakespeare")
        monkeypatch.setenv("SPECVIZ_EVENT_TIMEOUT_S", str(seconds))
    return set_limit


def test_a_heavy_link_is_cut_to_the_steps_its_predicted_time_allows(stepped, pair, public_event, monkeypatch):
    """The cost book holds what a serving server has (this pair's Steps and its verify-cost curve); the heavy link's
    replay is predicted long, holds a heavy slot, is cut to what fits in the 1 s an event may run here (or, where the
    shared machine runs slower than its medians said, stopped at the deadline), and says which knobs to change, in the
    page's language. (On this 2-core CPU the whole replay takes 2 s and more.)"""
    from specviz.engine import limits
    from specviz.engine.serving import costs, replay

    public_event(1)
    costs.pair_verify_costs(pair)
    slots = []
    monkeypatch.setattr(limits, "heavy_slot",
                        lambda tokens, n, busy=None: slots.append(busy) or contextlib.nullcontext())
    from specviz.engine.serving.run import ComparedRun

    step, starts = ComparedRun.step, []
    monkeypatch.setattr(ComparedRun, "step", lambda run: (starts.append(time.monotonic()), step(run))[1])
    start = time.monotonic()
    opened, view, settings, status = open_link_handler(Session(), heavy_link(stepped[1]), lang="en")
    assert status.error and "of the link's 100000" in status.text or "its 100000 steps" in status.text, status.text
    assert all(knob in status.text for knob in ("γ 16", "8 drafts", "200 new tokens", "1 s", "smaller step"))
    if "not replayed" in status.text:  # a machine busy enough to price even one round past the second: refused
        assert opened.run is None and settings is None
    else:  # cut (or stopped where the machine ran slower than its medians): the run is the tab's, Step goes on from it
        assert "Replayed to step" in status.text or "was stopped at step" in status.text
        assert 1 <= len(opened.traces) < 100_000 and settings["gamma"] == 16
        assert slots.count(replay.REPLAY_BUSY) == 1
    assert not starts or max(starts) < start + 1.1  # no round started past the event's second
    zh = open_link_api(heavy_link(stepped[1]), "zh")
    assert not zh["ok"] and any(said in zh["message"] for said in ("重放到", "步停止", "未重放")) and "γ 16" in zh["message"]


def test_a_replay_the_machine_makes_slower_than_predicted_stops_between_rounds_at_the_deadline(
        stepped, pair, public_event, monkeypatch):
    """A cost book that prices this round shape at 0.1 ms plans the whole replay; every Step then takes 0.25 s more
    (a machine slower than predicted), so the 4 s deadline stops it between two rounds (none starts past it), with a
    message naming the step reached and the knobs."""
    from specviz.core.trace import StepRecord
    from specviz.engine.serving import costs
    from specviz.engine.serving.run import ComparedRun

    public_event(4)
    book = costs.CostBook()
    fast = StepRecord(gamma=16, n_accepted=16, n_examined=16, n_emitted=17, draft_s=1e-4, target_s=1e-4, step_s=2e-4)
    book.record(costs.pair_key(pair), ("model", 1, 16), target_s=[1e-4] * 64, rounds=[fast] * 64)  # the real first
    # Step adds its own forwards to these: the book's medians stay the planted ones
    monkeypatch.setattr(costs, "COSTS", book)
    step, starts = ComparedRun.step, []
    monkeypatch.setattr(ComparedRun, "step", lambda run: (starts.append(time.monotonic()), step(run), time.sleep(0.25))[1])
    start = time.monotonic()
    opened, _, settings, status = open_link_handler(Session(), heavy_link(stepped[1], drafts=1), lang="ja")
    assert status.error and "止まりました" in status.text and "γ 16" in status.text, status.text
    assert f"ステップ {len(opened.traces)} で" in status.text and 2 <= len(opened.traces) == len(starts) < 100_000
    assert max(starts) < start + 4.1  # no round started past the deadline: it stopped between two rounds
