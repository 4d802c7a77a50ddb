"""UI handlers without a browser: sessions are isolated, views are named, bad input becomes a message."""
from __future__ import annotations

import copy
import re
import threading

import pytest

from specviz.app.handlers import play_handler, reset_handler, step_handler, tick_handler, view_handler
from specviz.present import render
from specviz.present.views import Session, sweep_view


def error_of(view) -> str:
    return view.message if "message-error" in view.message else ""


def test_each_tab_gets_a_fresh_session_even_from_a_used_one(page_settings, pair):
    used, _ = step_handler(Session(), page_settings())
    assert len(used.traces) == 1
    fresh = copy.deepcopy(used)
    assert fresh is not used and fresh.traces == [] and fresh.run is None and fresh.lock is not used.lock


def test_step_renders_every_view_by_name(page_settings, pair):
    session, view = step_handler(Session(), page_settings())
    assert len(session.traces) == 1 and view.view_step == 1
    assert 'data-verdict="' in view.timeline and "Step 1" in view.step_card
    assert "1. Draft" in view.step_card and "2. Verify" in view.step_card and "3. Correct" in view.step_card
    assert "target passes" in view.counters
    assert len(view.pq.data) >= 3 and len(view.uniform.data) >= 2 and len(view.residual.data) >= 2
    assert len(view.history.data) == 3
    assert "1. Draft" in view.narration and not error_of(view)


def test_sessions_do_not_share_state_or_random_streams(page_settings, pair):
    a, b = Session(), Session()
    step_handler(a, page_settings())
    step_handler(b, page_settings(seed=99))
    step_handler(a, page_settings())
    solo = Session()
    step_handler(solo, page_settings())
    step_handler(solo, page_settings())
    assert len(a.traces) == 2 and len(b.traces) == 1
    assert a.run.tokens == solo.run.tokens  # b's steps did not touch a's generator


def test_notation_switch_relabels_figures_and_narration(page_settings, pair):
    session, _ = step_handler(Session(), page_settings())
    lev = view_handler(session, "leviathan", 1)[1]
    chen = view_handler(session, "chen", 1)[1]
    masada = view_handler(session, "masada", 1)[1]
    assert "target p(x)" in str(lev.pq.to_dict()) and "target q(x)" in str(chen.pq.to_dict())
    assert "θ" in masada.narration and "φ" in masada.narration and "θ" not in lev.narration
    with pytest.warns(DeprecationWarning, match="masada"):  # the old key still works, with a warning
        assert view_handler(session, "seed004", 1)[1].narration == masada.narration


def test_empty_prompt_shows_a_message_and_keeps_the_session_usable(page_settings, pair):
    session, view = step_handler(Session(), page_settings(prompt="  "))
    assert "empty" in error_of(view)
    session, view = step_handler(session, page_settings())
    assert len(session.traces) == 1 and not error_of(view)


def test_step_after_the_end_and_failing_preset_are_messages(page_settings, pair, monkeypatch):
    session = Session()
    for _ in range(12):
        session, view = step_handler(session, page_settings(max_new_tokens=6))
    assert "finished" in error_of(view)
    import specviz.engine.serving.run as run
    from specviz.engine.models.presets import ModelLoadError

    def broken(*args, **kwargs):
        raise ModelLoadError("could not load the draft model 'x': offline")
    monkeypatch.setattr(run.RunSettings, "load", broken)
    session, view = step_handler(session, page_settings(preset="smollm2"))
    assert "could not load" in error_of(view) and len(session.traces) >= 1  # the old run is still shown
    monkeypatch.undo()
    session, view = step_handler(session, page_settings())
    assert not error_of(view)


def test_out_of_range_and_non_whole_knobs_are_messages_not_coerced(page_settings, pair):
    for change, word in [({"gamma": -1}, "gamma"), ({"gamma": 17}, "gamma"), ({"gamma": 2.5}, "gamma"), ({"seed": 2.5}, "seed"),
                         ({"top_p": float("nan")}, "top_p"), ({"preset": "nope"}, "preset")]:
        _, view = step_handler(Session(), page_settings(**change))
        assert word in error_of(view), change


def test_lone_surrogate_in_the_prompt_is_echoed_cleanly(page_settings, pair):
    _, view = step_handler(Session(), page_settings(prompt="KING.\ud800 x"))
    assert not error_of(view)
    view.timeline.encode("utf-8")  # would raise on a lone surrogate


def test_ticks_after_pause_or_reset_do_nothing(page_settings, pair):
    session, playing = play_handler(Session())
    assert playing
    tick_handler(session, page_settings())
    assert len(session.traces) == 1
    session, _ = reset_handler(session, "leviathan")
    session, view, playing = tick_handler(session, page_settings())
    assert session.traces == [] and not playing and view is None


def test_play_stops_on_an_error_reported_as_data(page_settings, pair):
    session, _ = play_handler(Session())
    session, view, playing = tick_handler(session, page_settings(gamma=-1))
    assert not playing and "gamma" in error_of(view)


def test_text_tokens_carry_verdicts_and_steps(page_settings, pair):
    session = Session()
    for _ in range(4):
        session, view = step_handler(session, page_settings())
    chips = re.findall(r'class="chip (\w+)" data-verdict="(\w+)" data-step="(\d+)" tabindex="0"', view.timeline)
    emitted = sum(len(t.emitted) + len(t.rejected) for t in session.traces)
    assert len(chips) == emitted
    assert all(cls == verdict for cls, verdict, _ in chips)
    assert {int(step) for *_, step in chips} == {1, 2, 3, 4}
    assert {v for _, v, _ in chips} >= {"accepted"} and {v for _, v, _ in chips} & {"bonus", "resampled"}


def test_greedy_card_speaks_of_argmaxes_and_mentored_card_of_kl(page_settings, pair):
    _, greedy = step_handler(Session(), page_settings(temperature=0))
    assert "argmax" in greedy.step_card and "u =" not in greedy.step_card and "argmax" in greedy.narration
    _, mentored = step_handler(Session(), page_settings(kl_budget=0.3))
    assert "LOSSY" in mentored.step_card and "KL" in mentored.step_card and "exact" in mentored.step_card
    assert "LOSSY" in mentored.counters


def test_parallel_sessions_match_serial_runs(page_settings, pair):
    """Four tabs stepping at once in threads produce exactly what each produces alone."""
    def run(seed, out):
        session = Session()
        for _ in range(4):
            step_handler(session, page_settings(seed=seed))
        out[seed] = session.run.tokens

    parallel, serial = {}, {}
    threads = [threading.Thread(target=run, args=(seed, parallel)) for seed in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for seed in range(4):
        run(seed, serial)
    assert parallel == serial


def test_message_html_is_escaped():
    assert "<script>" not in render.message_html(render.Status("error", "<script>x</script>"))


def test_the_sweep_runs_on_the_context_even_after_the_run_finished(page_settings, pair):
    """A finished run has dropped its KV caches; the sweep still reads its tokens and the pair."""
    session = Session()
    assert sweep_view(session, "leviathan")[1].error
    while session.run is None or not session.run.finished:
        step_handler(session, page_settings(max_new_tokens=5))
    assert not session.run.warm
    figure, status = sweep_view(session, "leviathan")
    assert not status.error and len(figure.data) >= 2
    alphas = figure.data[0].y
    assert all(0 <= a <= 1 for a in alphas) and len(alphas) == 7
    assert all(a >= m for a, m in zip(alphas, figure.data[1].y))  # sum min(p, q) >= sum p*q


@pytest.mark.parametrize("lang, said", [("en", "captured in 0.25 s"), ("zh", "用时 0.25 秒"), ("ja", "0.25 秒でキャプチャ")])
def test_a_new_run_says_what_its_graph_captures_took(page_settings, pair, monkeypatch, lang, said):
    """On CUDA a run's decoders capture their graphs before its first timed step; the Step that starts it says
    how long that took (CPU runs capture nothing and say nothing: the first half of the test)."""
    from specviz.engine.serving.run import ComparedRun

    _, view = step_handler(Session(), page_settings(lang=lang))
    assert said not in view.message
    monkeypatch.setattr(ComparedRun, "capture_s", property(lambda run: 0.25))
    _, view = step_handler(Session(), page_settings(lang=lang))
    assert said in view.message


def test_every_text_field_hint_in_words_is_a_translation_key(built_app):
    """A hint written in the code stays English on a Chinese or Japanese page (the own pair's "e.g. ..." did); a
    hint of numbers alone ("0.9, 0.75, 0.6") reads the same in every language."""
    hints = {c["props"].get("elem_id"): str(c["props"]["placeholder"]) for c in built_app.config["components"]
             if c.get("props", {}).get("placeholder")}
    assert {"draft-model", "target-model"} <= set(hints)
    for elem_id, hint in hints.items():
        assert ("translation_metadata" in hint) or re.fullmatch(r"[\d., ]+", hint), (elem_id, hint)
