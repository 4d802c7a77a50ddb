"""UI handlers without a browser: sessions are isolated, bad input becomes a message."""
from __future__ import annotations

import copy


from specviz import figures
from specviz.ui import Session, play_handler, reset_handler, step_handler, tick_handler, view_handler

KNOBS = ("shakespeare", "ROMEO.\nBut soft", 4, 1.0, 0, 1.0, 0.0, 0, 40)  # preset, prompt, gamma, T, top-k, top-p, D, seed, max


def knobs(**change):
    names = ["preset", "prompt", "gamma", "temperature", "top_k", "top_p", "kl_budget", "seed", "max_new"]
    values = dict(zip(names, KNOBS))
    values.update(change)
    return tuple(values[n] for n in names)


def test_each_tab_gets_a_fresh_session():
    initial = Session()
    assert copy.deepcopy(initial) is not initial and copy.deepcopy(initial).traces == []


def test_step_renders_timeline_counters_figures_and_narration(pair):
    out = step_handler(Session(), "leviathan", *KNOBS)
    session, timeline, counters, pq, uniform, residual, narration, view, history, message = out
    assert len(session.traces) == 1 and view == 1
    assert 'data-verdict="' in timeline and "speedup" in counters
    assert len(pq.data) >= 4 and len(uniform.data) >= 2 and len(residual.data) >= 2 and len(history.data) == 3
    assert "1. Draft" in narration and "2. Verify" in narration and "3. Correct" in narration
    assert "message-error" not in message


def test_sessions_do_not_share_state_or_random_streams(pair):
    a, b = Session(), Session()
    step_handler(a, "leviathan", *KNOBS)
    step_handler(b, "leviathan", *knobs(seed=99))
    step_handler(a, "leviathan", *KNOBS)
    solo = Session()
    step_handler(solo, "leviathan", *KNOBS)
    step_handler(solo, "leviathan", *KNOBS)
    assert len(a.traces) == 2 and len(b.traces) == 1
    assert a.spec.generated_ids == solo.spec.generated_ids  # b's steps did not touch a's generator


def test_notation_switch_relabels_figures_and_narration(pair):
    session = step_handler(Session(), "leviathan", *KNOBS)[0]
    lev = view_handler(session, "leviathan", 1)
    dm = view_handler(session, "deepmind", 1)
    th = view_handler(session, "seed004", 1)
    assert "target p(x)" in str(lev[3].to_dict()) and "target q(x)" in str(dm[3].to_dict())
    assert "θ" in th[6] and "φ" in th[6] and "θ" not in lev[6]


def test_empty_prompt_shows_a_message_and_keeps_the_session_usable(pair):
    session = Session()
    out = step_handler(session, "leviathan", *knobs(prompt="  "))
    assert "message-error" in out[-1] and "empty" in out[-1]
    out = step_handler(out[0], "leviathan", *KNOBS)
    assert len(out[0].traces) == 1 and "message-error" not in out[-1]


def test_step_after_the_end_and_failing_preset_are_messages(pair, monkeypatch):
    session = Session()
    for _ in range(12):
        out = step_handler(session, "leviathan", *knobs(max_new=6))
    assert "finished" in out[-1] and "message-error" in out[-1]
    import specviz.ui as ui

    def broken(name):
        raise ui.ModelLoadError(f"could not load the draft model {name!r}: offline")
    monkeypatch.setattr(ui, "load_pair", broken)
    out = step_handler(session, "leviathan", *knobs(preset="smollm2"))
    assert "could not load" in out[-1] and len(session.traces) >= 1  # the old run is still shown
    monkeypatch.undo()
    out = step_handler(session, "leviathan", *KNOBS)
    assert "message-error" not in out[-1]


def test_out_of_range_knobs_are_messages(pair):
    out = step_handler(Session(), "leviathan", *knobs(gamma=0))
    assert "gamma" in out[-1] and "message-error" in out[-1]


def test_ticks_after_pause_or_reset_do_nothing(pair):
    session = Session()
    session = play_handler(session, 0.5)[0]
    assert session.playing
    tick_handler(session, "leviathan", *KNOBS)
    assert len(session.traces) == 1
    session = reset_handler(session, "leviathan")[0]
    out = tick_handler(session, "leviathan", *KNOBS)
    assert session.traces == [] and not session.playing and out[0] is session


def test_timeline_chips_carry_verdicts_and_steps():
    html = figures.timeline_html("x", [])
    assert 'class="chip"' not in html  # the legend swatches are not chips


def test_parallel_sessions_match_serial_runs(pair):
    """Four tabs stepping at once in threads produce exactly what each produces alone."""
    import threading

    def run(seed, out):
        session = Session()
        for _ in range(4):
            step_handler(session, "leviathan", *knobs(seed=seed))
        out[seed] = session.spec.generated_ids

    parallel, serial = {}, {}
    threads = [threading.Thread(target=run, args=(seed, parallel)) for seed in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for seed in range(4):
        run(seed, serial)
    assert parallel == serial
