"""The page's events: which handler runs on which trigger, with what inputs, outputs and queue.

`build_app` creates the page (layout.py) inside one gr.Blocks and wires it here, as gradio's own
demos do. Model-bound events share one queue (`concurrency_id="model"`) so a class queues
instead of thrashing the machine; everything else runs unqueued and private.
"""
from __future__ import annotations

import json

import gradio as gr

from ..engine.limits import event_deadline
from ..engine.models.presets import PRESETS
from ..engine.settings import current as current_deployment
from ..present import render
from ..present.debug_panels import debug_panels_view
from ..present.i18n import CATALOGUE, LANGUAGES, tr
from ..present.page_settings import RACE_PARAMETERS, STEP_PARAMETERS, PageSettings
from ..present.race import race_html
from ..present.recorded import race_view
from ..present.share import LINK_SETTINGS
from ..present.views import Session, View, export_files, kl_buys, sweep_view
from .gradio_internals import cache_dir, forget_tab
from .handlers import (
    DEFAULT_NOTATION,
    adopt,
    follow_handler,
    intro,
    play_handler,
    race_handler,
    reset_handler,
    step_handler,
    stop_handler,
    tick_handler,
    view_handler,
    what_you_see,
)
from .layout import (
    CLASSROOM_PACE_S,
    KL_STEPS,
    Page,
    build_layout,
    drafter_choices,
    notation_choices,
    preset_choices,
    toy_choices,
)
from .playground_wiring import wire_playground
from .predict_ui import wire_predict
from .share import READ_LINK_JS, show_opening, wire_share

CACHE_SWEEP = (300, 900)  # (every, older than) seconds: gradio's delete_cache


def build_app() -> gr.Blocks:
    # gradio's cache (exports it serves, uploads) is swept every 5 minutes of files older than 15
    with gr.Blocks(title="specviz: speculative decoding, step by step", delete_cache=CACHE_SWEEP) as demo:
        page = build_layout()
        show_opening(list(view_outputs(page)), page.step.race)  # the first paint: a recorded lesson, before any model is called
        wire(demo, page)
    return demo


def wire(demo: gr.Blocks, page: Page) -> None:
    """Each group's events, one function a group (a new group: its own wire_* function, called here). Handlers
    of one trigger run in the order they were wired: #lang's own before the playground's."""
    stepping = wire_step(page)
    wire_race(page)
    loaded = wire_toolbar(demo, page)
    wire_view(page)
    wire_settings(page, stepped=stepping[0])
    wire_debug(demo, page)
    wire_acceptance_panels(page, after=stepping)
    wire_playground(page.pg, page.settings.notation, page.toolbar.lang, LIGHT, loaded)
    wire_share(demo, page, list(view_outputs(page)), model_queue(), setting_inputs(page, LINK_SETTINGS))
    wire_predict(page, list(view_outputs(page)), lambda view: updates(page, view))
    wire_session(demo)


# Event settings shared by the groups. Model-bound events share one queue: a class queues, not thrashes; one
# worker more than heavy work may hold (engine/limits.py), so a light Step always finds one while long
# prompts are read. Knobs reach DecodeConfig as sent: refused by name, never rounded or clipped (RAW).
LIGHT = dict(concurrency_limit=None, api_visibility="private")
LIGHT_PUBLIC = dict(concurrency_limit=None)
RAW = dict(preprocess=False)


def model_queue() -> dict:
    return dict(concurrency_id="model", concurrency_limit=current_deployment().concurrency + 1)


def setting_inputs(page: Page, names: tuple[str, ...]) -> dict:
    """The components that send the named page settings (PageSettings' fields), by name: gradio passes each
    value as the handler's keyword argument of that name, and the API lists them in this order."""
    return {name: getattr(page.toolbar if name in TOOLBAR_SETTINGS else page.settings, name) for name in names}


TOOLBAR_SETTINGS = {"lang"}   # settings whose component sits in the toolbar, not the settings column


def view_outputs(page: Page) -> View:
    """The components a View fills, in View's order."""
    v, d = page.step, page.debug
    return View(v.timeline, v.step_card, v.counters, v.narration, v.pq_plot, v.uniform_plot, v.residual_plot,
                v.history_plot, v.view_step, page.controls.message, d.analytics, d.analytics_plot, d.rejections,
                d.most_rejected, v.summary)


def all_views(page: Page) -> list:
    """The session and every view, as a list: the API returns outputs in this order."""
    return [page.session, *view_outputs(page)]


def updates(page: Page, view: View | None) -> dict:
    outputs = view_outputs(page)
    return {c: gr.skip() for c in outputs} if view is None else dict(zip(outputs, view))


def play_label(playing: bool, lang_code: str) -> gr.Button:
    return gr.Button(value=tr(lang_code, "btn.pause" if playing else "btn.play"))


def playing_updates(page: Page, playing: bool, lang_code: str) -> dict:
    return {page.timer: gr.Timer(active=playing), page.controls.play_btn: play_label(playing, lang_code)}


def shown_view(page: Page, s, n, step, code) -> dict:
    """The session and every view for step `step` in notation `n`, language `code`."""
    s, view = view_handler(s, n, step, lang=code)
    return {page.session: s, **updates(page, view)}


def wire_step(page: Page) -> list:
    """Step, Play (a timer's ticks) and Reset; returns their events (what shows a run redraws after them)."""
    session, timer, c = page.session, page.timer, page.controls

    def on_step(session_state, request: gr.Request = None, **sent):  # /step's parameters: PageSettings' fields
        settings = PageSettings(**sent)
        s, view = step_handler(adopt(session_state, request.session_hash, settings.lang), settings)
        s.drawn_lang = settings.lang
        return {session: s, **updates(page, view)}

    def on_tick(s, request: gr.Request = None, **sent):
        settings = PageSettings(**sent)
        s, view, playing = tick_handler(adopt(s, request.session_hash, settings.lang), settings)
        s.drawn_lang = settings.lang
        return {session: s, **updates(page, view), **playing_updates(page, playing, settings.lang)}

    def on_play(s, seconds, code):
        s, playing = play_handler(s)
        return {session: s, timer: gr.Timer(value=float(seconds), active=playing), c.play_btn: play_label(playing, code)}

    def on_stop(s, code):
        s, playing = stop_handler(s)
        if isinstance(s, Session):
            s.lang = code  # the reset that follows speaks it (/reset's API takes the notation alone)
        return {session: s, **playing_updates(page, playing, code)}

    def on_reset(s, n):
        s, view = reset_handler(s, n, lang=getattr(s, "lang", "en"))
        return {session: s, **updates(page, view)}

    decoding = dict(inputs=[session], inputs_kwargs=setting_inputs(page, STEP_PARAMETERS))
    # trigger_mode="multiple": quick presses queue (5 presses = 5 steps), serialised by the session's lock;
    # no progress display: it kept the browser busy exactly while the round's forwards were being timed
    stepped = c.step_btn.click(on_step, **decoding, outputs=all_views(page), api_name="step",
                               trigger_mode="multiple", show_progress="hidden", **model_queue(), **RAW)
    tick = timer.tick(on_tick, **decoding, outputs=[*all_views(page), timer, c.play_btn], api_visibility="private",
                      show_progress="hidden", **model_queue(), **RAW)
    # "multiple", as Step: a Pause pressed while the Play before it lands is a press, not dropped (each toggles in turn)
    c.play_btn.click(on_play, [session, page.toolbar.speed, page.toolbar.lang], [session, timer, c.play_btn],
                     trigger_mode="multiple", **LIGHT)
    was_reset = c.reset_btn.click(on_stop, [session, page.toolbar.lang], [session, timer, c.play_btn],
                                  cancels=[tick], **LIGHT).then(on_reset, [session, page.settings.notation], all_views(page),
                                                api_name="reset", concurrency_limit=None, **RAW)
    wire_follow_up(page, [stepped, tick])
    return [stepped, tick, was_reset]


def wire_follow_up(page: Page, events: list) -> None:
    """After a Step's or a tick's answer (`events`) has landed: the opening lesson's recorded race gives way at the
    tab's first own Step (a race or recording stays); views drawn in the language the Step was sent in follow a #lang
    switch made while it ran (#lang's own redraw came first and was drawn over); a page following the latest step
    that shows an older one is redrawn at the latest (`follow_handler`)."""
    session = page.session

    def after_step(s, n, code, shown_step):
        if not isinstance(s, Session):
            return gr.skip()
        shown = {page.step.race: race_html(None, code)} if not s.races and s.recorded is None and s.run is not None else {}
        view = follow_handler(s, n, shown_step, lang=code)
        if view is not None:
            shown.update({session: s, **updates(page, view)})
        return shown or gr.skip()
    # "always_last": under gradio's default ("once") the follow-up of quick presses' later Steps was skipped in the
    # browser while an earlier one's ran, and the page could be left on an older step (a full run saw Step 3 after 5);
    # deferred, one more follow-up runs once the earlier ends, reading the page and the session as they are then
    for event in events:
        event.then(after_step, [session, page.settings.notation, page.toolbar.lang, page.step.view_step],
                   [*all_views(page), page.step.race], show_progress="hidden", trigger_mode="always_last", **LIGHT)


def wire_race(page: Page) -> None:
    """The race: both sides alone, replayed on one clock."""
    session, race, message = page.session, page.step.race, page.controls.message

    def on_race(s, request: gr.Request = None, **sent):  # /step's parameters but notation
        settings = PageSettings(notation=DEFAULT_NOTATION, **sent)
        s, shown, status = race_handler(adopt(s, request.session_hash, settings.lang), settings)
        if shown is not None:
            s.race_lang = settings.lang
        return {session: s, race: gr.skip() if shown is None else shown, message: render.message_html(status)}

    def follow_lang(s, code):  # as a Step's: a race drawn in the language it was sent in, #lang moved meanwhile
        if not isinstance(s, Session) or s.race_lang == code:
            return gr.skip()
        s.race_lang = code
        return race_view(s, code) or gr.skip()

    # the race's own forwards are timed: only a small timer on #race moves in the browser meanwhile
    page.controls.race_btn.click(on_race, inputs=[session], inputs_kwargs=setting_inputs(page, RACE_PARAMETERS),
                                 outputs=[session, race, message], api_name="race", show_progress="minimal",
                                 show_progress_on=race, **model_queue(), **RAW).then(
        follow_lang, [session, page.toolbar.lang], race, show_progress="hidden", **LIGHT)


def wire_view(page: Page) -> None:
    """Which step is shown, in which notation."""
    notation, view_step, lang = page.settings.notation, page.step.view_step, page.toolbar.lang

    def on_view(s, n, step, code):
        return shown_view(page, s, n, step, code)

    gr.on([notation.change, view_step.input], on_view, [page.session, notation, view_step, lang], all_views(page),
          **LIGHT, **RAW)
    notation.change(intro, [notation, lang], page.settings.header, **LIGHT)
    page.step.show_rejected.change(None, page.step.show_rejected, None, api_visibility="private",
                 js="(v) => { document.querySelector('#timeline').classList.toggle('hide-rejected', !v); }")


def wire_toolbar(demo: gr.Blocks, page: Page):
    """The language, classroom mode and the phase reveal; returns the page's load event (it sets the language)."""
    t, header, what, race = page.toolbar, page.settings.header, page.step.what, page.step.race
    play_btn = page.controls.play_btn

    def on_lang(s, n, step, code, playing_label, link):
        shown_race = race_view(s if isinstance(s, Session) else Session(), code)  # the tab's own race redrawn too
        # the step shown is the session's own (its `viewing`): #view-step's value was read when the event was sent,
        # and an event holding the session's lock meanwhile (a link opening as the page loads) may have moved it.
        # A link the page loaded with and no event has read yet draws the views itself, in this language: a lesson
        # drawn here could reach the browser after the link's card and cover it (the two run side by side)
        link_pending = bool(link) and not (isinstance(s, Session) and s.link_read)
        views = {c: gr.skip() for c in all_views(page)} if link_pending else shown_view(page, s, n, None, code)
        # the message stays: the event that wrote it (a link opened as the page loads, whose lock this event waited
        # on) may have ended before this one, and a redraw would wipe what it said
        return {**views, page.controls.message: gr.skip(), header: intro(n, code),
                what: what_you_see(code),
                race: gr.skip() if shown_race is None else shown_race,
                play_btn: gr.Button(value=tr(code, "btn.pause" if playing_label in PAUSE_LABELS else "btn.play"))}

    notation = page.settings.notation
    t.lang.change(on_lang, [page.session, notation, page.step.view_step, t.lang, play_btn, page.share.link_in],
                  [*all_views(page), header, what, play_btn, race], **LIGHT)
    t.lang.change(None, t.lang, None, js=SET_LOCALE_JS, api_visibility="private")
    t.lang.change(relabel, t.lang, [*page.tabs, notation, page.settings.preset, page.pg.preset,
                                    page.settings.drafter], **LIGHT)
    # one load sets the language and the link together, so #lang's redraw is sent knowing a link is on its way
    loaded = demo.load(None, None, [t.lang, t.classroom, t.predict, page.share.link_in, page.share.page_url],
                       js=INITIAL_JS, api_visibility="private")
    t.classroom.change(None, t.classroom, None, js="(on) => { document.body.classList.toggle('classroom', !!on); }",
                       api_visibility="private")
    t.classroom.change(lambda on, s: max(float(s), CLASSROOM_PACE_S) if on else s, [t.classroom, t.speed], t.speed,
                       **LIGHT)
    t.reveal.change(None, t.reveal, None, js="(on) => { document.body.classList.toggle('reveal', !!on); }",
                    api_visibility="private")
    return loaded


def kl_position(budget) -> int:
    """#kl-scale's position for a budget typed into #kl-budget: the largest step at or below it."""
    ok = isinstance(budget, (int, float)) and not isinstance(budget, bool) and budget == budget
    return max((i for i, step in enumerate(KL_STEPS) if ok and step <= budget), default=0)


def wire_settings(page: Page, stepped) -> None:
    """The knobs that fill in others: the KL scale, the KL note (again after each Step: the context moved; and on
    #lang), the example prompts."""
    settings = page.settings

    def on_kl(s, budget, code):
        with event_deadline(current_deployment().event_timeout_s):
            return kl_buys(s, budget, code)

    settings.kl_scale.input(lambda i: KL_STEPS[int(i)], settings.kl_scale, settings.kl_budget, **LIGHT)
    settings.kl_budget.input(kl_position, settings.kl_budget, settings.kl_scale, **LIGHT)  # typed: the scale follows
    for trigger in (settings.kl_budget.change, stepped.then, page.toolbar.lang.change):
        trigger(on_kl, [page.session, settings.kl_budget, page.toolbar.lang], settings.kl_note, **model_queue(),
                api_visibility="private", show_progress="hidden")
    settings.example.change(lambda e, p: e or p, [settings.example, settings.prompt], settings.prompt, **LIGHT)
    settings.preset.change(lambda p: gr.Dropdown(choices=PRESETS[p].prompt_choices if p in PRESETS else [], value=None),
                           settings.preset, settings.example, **LIGHT)


def wire_debug(demo: gr.Blocks, page: Page) -> None:
    """The debugging view: a rejection shows its step, the gamma sweep, the exports."""
    d, notation, lang = page.debug, page.settings.notation, page.toolbar.lang

    def on_rejection_click(s, n, code, evt: gr.SelectData):
        row = evt.row_value if evt is not None else None
        return shown_view(page, s, n, row[0] if row else None, code)

    def on_sweep(s, n, code):
        with event_deadline(current_deployment().event_timeout_s):
            figure, status = sweep_view(s, n, code)
        return figure or gr.skip(), render.message_html(status)

    def on_export(s):
        return export_files(s, cache_dir(demo))

    d.rejections.select(on_rejection_click, [page.session, notation, lang], all_views(page), **LIGHT).then(
        None, None, None, api_visibility="private",  # the card may be far above: bring it into view
        js="() => { document.querySelector('#step-card')?.scrollIntoView({behavior: 'smooth', block: 'start'}); }")
    d.sweep_btn.click(on_sweep, [page.session, notation, lang], [d.sweep_plot, page.controls.message],
                      **model_queue(), api_visibility="private")
    d.export_btn.click(on_export, [page.session], [d.json_file, d.csv_file, d.traces_json], api_name="traces",
                       **LIGHT_PUBLIC)


def wire_acceptance_panels(page: Page, after: list) -> None:
    """The what-if and per-request panels redraw on their button, Enter in a typed setting and #lang, and after
    each event in `after` (Step, Play's tick, Reset: the events that change the run they show); unqueued, under
    the session's lock."""
    p = page.debug.panels
    inputs = [page.session, p.curve, p.cost, p.gammas, p.drafts, page.toolbar.lang]
    outputs = [p.table, p.plot, p.note, p.histogram]
    gr.on([p.run.click, p.curve.submit, p.cost.submit, p.gammas.submit, p.drafts.submit, page.toolbar.lang.change],
          debug_panels_view, inputs, outputs, **LIGHT)
    for event in after:
        event.then(debug_panels_view, inputs, outputs, **LIGHT)


def wire_session(demo: gr.Blocks) -> None:
    def on_unload(request: gr.Request):  # gradio passes the closed tab's request, no inputs
        forget_tab(demo, request)
    demo.unload(on_unload)


def relabel(code: str) -> list:
    """What gradio's i18n leaves as it was on a #lang switch: the tabs' names (given once, at mount) and the
    labels of choices (the notation's sources, the model pairs, the playground's presets, the drafters)."""
    return [gr.Tab(label=tr(code, "tab.live")), gr.Tab(label=tr(code, "tab.playground")),
            gr.Radio(choices=notation_choices(code)), gr.Dropdown(choices=preset_choices(code)),
            gr.Dropdown(choices=toy_choices(code)), gr.Radio(choices=drafter_choices(code))]


PAUSE_LABELS = {CATALOGUE[code]["btn.pause"] for code in CATALOGUE}
# The page's language on load: ?lang= in the URL, else the browser's; ?classroom=1 turns classroom mode on and
# ?predict=1 predict mode; then the link it was opened with and its address (READ_LINK_JS). The codes come from
# LANGUAGES, so a new locale file needs no change here.
INITIAL_JS = """() => {
  const q = new URLSearchParams(location.search);
  const wanted = (q.get('lang') || navigator.language || 'en').toLowerCase().split('-')[0];
  return [CODES.includes(wanted) ? wanted : 'en', q.get('classroom') === '1', q.get('predict') === '1',
          ...(READ_LINK)()];
}""".replace("CODES", json.dumps(list(LANGUAGES))).replace("READ_LINK", READ_LINK_JS)
# gradio translates the labels in the browser; #lang moves its locale too (window.specvizSetLocale, page.js)
SET_LOCALE_JS = "(code) => { window.specvizSetLocale && window.specvizSetLocale(code); }"
