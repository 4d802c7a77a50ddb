"""The page's events: which handler runs on which trigger, with what inputs, outputs and queue.

`build_app` creates the page (layout.py) inside one gr.Blocks and wires it here, as gradio's own
demos do. Model-bound events share one queue (`concurrency_id="model"`) so a class queues
instead of thrashing the machine; everything else runs unqueued and private.
"""
from __future__ import annotations

import json

import gradio as gr

from ..core import playground
from ..engine.limits import event_deadline
from ..engine.presets import PRESETS
from ..engine.settings import current as current_deployment
from ..present import render
from ..present.errors import localize
from ..present.i18n import CATALOGUE, LANGUAGES, tr
from ..present.race import race_html
from ..present.views import (Session, View, export_files, kl_buys, playground_drafts_run, playground_run, playground_view,
                             sweep_view)
from .debug_panels import wire_debug_panels
from .gradio_internals import cache_dir, forget_tab
from .handlers import (adopt, intro, play_handler, race_handler, reset_handler, step_handler, stop_handler,
                       tick_handler, view_handler, what_you_see)
from .layout import (CLASSROOM_PACE_S, KL_STEPS, Page, build_layout, drafter_choices, notation_choices, preset_choices,
                     toy_choices)


CACHE_SWEEP = (300, 900)  # (every, older than) seconds: gradio's delete_cache


def build_app() -> gr.Blocks:
    # gradio's cache (exports it serves, uploads) is swept every 5 minutes of files older than 15
    with gr.Blocks(title="specviz: speculative decoding, step by step", delete_cache=CACHE_SWEEP) as demo:
        wire(demo, build_layout())
    return demo


def wire(demo: gr.Blocks, page: Page) -> None:
    # the page's components by name, as build_layout made them
    (session, step_btn, play_btn, reset_btn, message, prompt, example, preset, gamma, temperature, kl_budget,
     notation, top_k, top_p, seed, max_new, speed, draft_model, target_model, header, step_card, timeline,
     show_rejected, view_step, counters, narration, pq_plot, uniform_plot, residual_plot, history_plot,
     analytics, analytics_plot, rejections, most_rejected, sweep_btn, sweep_plot, export_btn, json_file,
     csv_file, traces_json, pg, timer) = (
        page.session, page.step_btn, page.play_btn, page.reset_btn, page.message, page.prompt, page.example,
        page.preset, page.gamma, page.temperature, page.kl_budget, page.notation, page.top_k, page.top_p,
        page.seed, page.max_new, page.speed, page.draft_model, page.target_model, page.header, page.step_card,
        page.timeline, page.show_rejected, page.view_step, page.counters, page.narration, page.pq_plot,
        page.uniform_plot, page.residual_plot, page.history_plot, page.analytics, page.analytics_plot,
        page.rejections, page.most_rejected, page.sweep_btn, page.sweep_plot, page.export_btn, page.json_file,
        page.csv_file, page.traces_json, page.pg, page.timer)

    lang, classroom, what, summary, kl_scale, kl_note = page.lang, page.classroom, page.what, page.summary, page.kl_scale, page.kl_note

    knobs = [preset, prompt, gamma, temperature, top_k, top_p, kl_budget, seed, max_new, draft_model, target_model,
             page.drafts]  # drafts last: positional /step calls of older clients keep their meaning (then lang)
    view_outputs = View(timeline, step_card, counters, narration, pq_plot, uniform_plot, residual_plot,
                        history_plot, view_step, message, analytics, analytics_plot, rejections, most_rejected, summary)

    def updates(view: View | None) -> dict:
        return {c: gr.skip() for c in view_outputs} if view is None else dict(zip(view_outputs, view))

    def play_label(playing: bool, lang_code: str) -> gr.Button:
        return gr.Button(value=tr(lang_code, "btn.pause" if playing else "btn.play"))

    def playing_updates(playing: bool, lang_code: str) -> dict:
        return {timer: gr.Timer(active=playing), play_btn: play_label(playing, lang_code)}

    def on_step(session_state, notation, preset, prompt, gamma, temperature, top_k, top_p, kl_budget, seed,
            max_new_tokens, draft_model, target_model, drafts=1, lang="en", drafter="model",
            request: gr.Request = None):  # /step's parameters; each new one goes last, after lang
        s, view = step_handler(adopt(session_state, request.session_hash, lang), notation, preset, prompt, gamma, temperature,
                   top_k, top_p, kl_budget, seed, max_new_tokens, draft_model, target_model, drafts, drafter, lang=lang)
        return {session: s, **updates(view)}

    def on_tick(s, n, preset, prompt, gamma, temperature, top_k, top_p, kl_budget, seed, max_new_tokens, draft_model,
                target_model, drafts, code, drafter, request: gr.Request):  # named: gradio passes a Request only to a positional parameter
        s, view, playing = tick_handler(adopt(s, request.session_hash, code), n, preset, prompt, gamma, temperature, top_k,
                                        top_p, kl_budget, seed, max_new_tokens, draft_model, target_model, drafts,
                                        drafter, lang=code)
        return {session: s, **updates(view), **playing_updates(playing, code)}

    def on_play(s, seconds, code):
        s, playing = play_handler(s)
        return {session: s, timer: gr.Timer(value=float(seconds), active=playing), play_btn: play_label(playing, code)}

    def on_stop(s, code):
        s, playing = stop_handler(s)
        if isinstance(s, Session):
            s.lang = code  # the reset that follows speaks it (/reset's API takes the notation alone)
        return {session: s, **playing_updates(playing, code)}

    def on_reset(s, n):
        s, view = reset_handler(s, n, lang=getattr(s, "lang", "en"))
        return {session: s, **updates(view)}

    def on_view(s, n, step, code):
        s, view = view_handler(s, n, step, lang=code)
        return {session: s, **updates(view)}

    def on_lang(s, n, step, code, playing_label):
        raced = isinstance(s, Session) and s.races  # a race already shown stays; the empty line follows #lang
        return {**on_view(s, n, step, code), header: intro(n, code), what: what_you_see(code),
                page.race: gr.skip() if raced else race_html(None, code),
                play_btn: gr.Button(value=tr(code, "btn.pause" if playing_label in PAUSE_LABELS else "btn.play"))}

    all_views = [session, *view_outputs]  # a list: the API returns outputs in this order
    # a class queues, not thrashes; one worker more than heavy work may hold (engine/limits.py), so a light
    # Step always finds one while long prompts are read
    model = dict(concurrency_id="model", concurrency_limit=current_deployment().concurrency + 1)
    light = dict(concurrency_limit=None, api_visibility="private")
    light_public = dict(concurrency_limit=None)

    def on_race(s, preset, prompt, gamma, temperature, top_k, top_p, kl_budget, seed, max_new_tokens, draft_model,
                target_model, drafts=1, lang="en", drafter="model", request: gr.Request = None):  # /step's but notation
        s, shown, status = race_handler(adopt(s, request.session_hash, lang), preset, prompt, gamma, temperature,
                                        top_k, top_p, kl_budget, seed, max_new_tokens, draft_model, target_model,
                                        drafts, drafter, lang=lang)
        return {session: s, page.race: gr.skip() if shown is None else shown, message: render.message_html(status)}

    def on_rejection_click(s, n, code, evt: gr.SelectData):
        row = evt.row_value if evt is not None else None
        return on_view(s, n, row[0] if row else None, code)

    def on_sweep(s, n, code):
        with event_deadline(current_deployment().event_timeout_s):
            figure, status = sweep_view(s, n, code)
        return figure or gr.skip(), render.message_html(status)

    def on_kl(s, budget, code):
        with event_deadline(current_deployment().event_timeout_s):
            return kl_buys(s, budget, code)

    def on_export(s):
        return export_files(s, cache_dir(demo))
    raw = dict(preprocess=False)  # knobs reach DecodeConfig as sent: refused by name, never rounded or clipped
    # trigger_mode="multiple": quick presses queue (5 presses = 5 steps), serialised by the session's lock;
    # no progress display: it kept the browser busy exactly while the round's forwards were being timed
    stepped = step_btn.click(on_step, [session, notation, *knobs, lang, page.drafter], all_views, api_name="step",
                   trigger_mode="multiple", show_progress="hidden", **model, **raw)
    # the race's own forwards are timed: only a small timer on #race moves in the browser meanwhile
    page.race_btn.click(on_race, [session, *knobs, lang, page.drafter], [session, page.race, message], api_name="race",
                        show_progress="minimal", show_progress_on=page.race, **model, **raw)
    tick = timer.tick(on_tick, [session, notation, *knobs, lang, page.drafter], [*all_views, timer, play_btn],
              api_visibility="private", show_progress="hidden", **model, **raw)
    play_btn.click(on_play, [session, speed, lang], [session, timer, play_btn], **light)
    was_reset = reset_btn.click(on_stop, [session, lang], [session, timer, play_btn], cancels=[tick], **light).then(
        on_reset, [session, notation], all_views, api_name="reset", concurrency_limit=None, **raw)
    gr.on([notation.change, view_step.input], on_view, [session, notation, view_step, lang], all_views, **light, **raw)
    notation.change(intro, [notation, lang], header, **light)
    lang.change(on_lang, [session, notation, view_step, lang, play_btn], [*all_views, header, what, play_btn, page.race], **light)
    lang.change(None, lang, None, js=SET_LOCALE_JS, api_visibility="private")
    lang.change(relabel, lang, [*page.tabs, notation, preset, pg["preset"], page.drafter], **light)
    loaded = demo.load(None, None, [lang, classroom], js=INITIAL_JS, api_visibility="private")
    classroom.change(None, classroom, None, js="(on) => { document.body.classList.toggle('classroom', !!on); }",
                     api_visibility="private")
    classroom.change(lambda on, s: max(float(s), CLASSROOM_PACE_S) if on else s, [classroom, speed], speed, **light)
    page.reveal.change(None, page.reveal, None, js="(on) => { document.body.classList.toggle('reveal', !!on); }",
                       api_visibility="private")
    kl_scale.input(lambda i: KL_STEPS[int(i)], kl_scale, kl_budget, **light)
    kl_budget.change(on_kl, [session, kl_budget, lang], kl_note, **model, api_visibility="private")
    show_rejected.change(None, show_rejected, None, api_visibility="private",
                 js="(v) => { document.querySelector('#timeline').classList.toggle('hide-rejected', !v); }")
    example.change(lambda e, p: e or p, [example, prompt], prompt, **light)
    rejections.select(on_rejection_click, [session, notation, lang], all_views, **light).then(
        None, None, None, api_visibility="private",  # the card may be far above: bring it into view
        js="() => { document.querySelector('#step-card')?.scrollIntoView({behavior: 'smooth', block: 'start'}); }")
    sweep_btn.click(on_sweep, [session, notation, lang], [sweep_plot, message], **model, api_visibility="private")
    export_btn.click(on_export, [session], [json_file, csv_file, traces_json], api_name="traces", **light_public)
    wire_playground(pg, notation, lang, light, loaded)
    wire_debug_panels(page.debug_panels, session, lang, [stepped, tick, was_reset], light)

    def on_unload(request: gr.Request):  # gradio passes the closed tab's request, no inputs
        forget_tab(demo, request)
    demo.unload(on_unload)
    preset.change(lambda p: gr.Dropdown(choices=PRESETS[p].prompt_choices if p in PRESETS else [], value=None),
              preset, example, **light)


def relabel(code: str) -> list:
    """What gradio's i18n leaves as it was on a #lang switch: the tabs' names (given once, at mount) and the
    labels of choices (the notation's sources, the model pairs, the playground's presets, the drafters)."""
    return [gr.Tab(label=tr(code, "tab.live")), gr.Tab(label=tr(code, "tab.playground")),
            gr.Radio(choices=notation_choices(code)), gr.Dropdown(choices=preset_choices(code)),
            gr.Dropdown(choices=toy_choices(code)), gr.Radio(choices=drafter_choices(code))]


PAUSE_LABELS = {CATALOGUE[code]["btn.pause"] for code in CATALOGUE}
# The page's language on load: ?lang= in the URL, else the browser's; ?classroom=1 turns classroom mode on.
# The codes come from LANGUAGES, so a new locale file needs no change here.
INITIAL_JS = """() => {
  const q = new URLSearchParams(location.search);
  const wanted = (q.get('lang') || navigator.language || 'en').toLowerCase().split('-')[0];
  return [CODES.includes(wanted) ? wanted : 'en', q.get('classroom') === '1'];
}""".replace("CODES", json.dumps(list(LANGUAGES)))
# gradio translates the labels in the browser; #lang moves its locale too (window.specvizSetLocale, page.js)
SET_LOCALE_JS = "(code) => { window.specvizSetLocale && window.specvizSetLocale(code); }"


def wire_playground(pg: dict, notation, lang, light: dict, loaded) -> None:
    """The playground's events; a change of #lang redraws its figures and, once run, its tables in the new language."""
    def on_preset(name, seed, code):
        if name == "random":
            try:
                target, draft = playground.random_preset(playground.whole_number("seed", seed or 0, 0, playground.MAX_SEED))
            except ValueError as err:
                raise gr.Error(localize(code, str(err))) from err
        else:
            target, draft = playground.TOY_PRESETS[name]
        return ", ".join(f"{x:g}" for x in target), ", ".join(f"{x:g}" for x in draft)

    def on_edit(tokens, target, draft, kl, n, code):
        decomposition, mentored, status = playground_view(tokens, target, draft, kl, n, code)
        return (decomposition or gr.skip(), mentored or gr.skip(), render.message_html(status))

    def on_run(tokens, target, draft, samples, seed, n, code):
        histogram, summary, status = playground_run(tokens, target, draft, samples, seed, n, code)
        return histogram or gr.skip(), summary, render.message_html(status)

    def on_drafts_run(tokens, target, draft, k, samples, seed, n, code):
        histogram, acceptance, summary, status = playground_drafts_run(tokens, target, draft, k, samples, seed, n, code)
        return histogram or gr.skip(), acceptance or gr.skip(), summary, render.message_html(status)

    def again(run, outputs: int):
        """Re-run in the new language only what was already run (the seed makes it the same rounds)."""
        def redo(shown, *args):
            return run(*args) if shown else (gr.skip(),) * outputs
        return redo

    edits = [pg["tokens"], pg["target"], pg["draft"], pg["kl"], notation, lang]
    runs = [pg["tokens"], pg["target"], pg["draft"], pg["samples"], pg["seed"], notation, lang]
    drafts_runs = [pg["tokens"], pg["target"], pg["draft"], pg["drafts"], pg["samples"], pg["seed"], notation, lang]
    run_out = [pg["histogram"], pg["summary"], pg["message"]]
    drafts_out = [pg["drafts_histogram"], pg["drafts_acceptance"], pg["drafts_summary"], pg["message"]]
    pg["preset"].change(on_preset, [pg["preset"], pg["seed"], lang], [pg["target"], pg["draft"]], **light)
    figures = [pg["decomposition"], pg["mentored"], pg["message"]]
    loaded.then(on_edit, edits, figures, **light)   # after the page's language is set, so it draws in that one
    gr.on([pg["tokens"].change, pg["target"].change, pg["draft"].change, pg["kl"].release, notation.change,
           lang.change], on_edit, edits, figures, **light)
    pg["run"].click(on_run, runs, run_out, **light)
    pg["drafts_run"].click(on_drafts_run, drafts_runs, drafts_out, **light)
    gr.on([lang.change, notation.change], again(on_run, 3), [pg["summary"], *runs], run_out, **light)
    gr.on([lang.change, notation.change], again(on_drafts_run, 4), [pg["drafts_summary"], *drafts_runs], drafts_out,
          **light)
    gr.api(playground_endpoint, api_name="playground", concurrency_limit=current_deployment().concurrency)


def playground_endpoint(target: list[float], draft: list[float], samples: int = 100_000, variant: str = "exact",
                        seed: int = 0) -> dict:
    """Monte Carlo of one speculative round on toy distributions: counts per token, the target
    (`expected`), a chi-square `p_value` against it and the measured `acceptance_rate`."""
    try:
        return playground.simulate(target, draft, samples, variant, seed)
    except ValueError as err:
        raise gr.Error(str(err)) from err
