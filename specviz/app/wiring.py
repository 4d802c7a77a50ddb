"""The page's events: which handler runs on which trigger, with what inputs, outputs and queue.

`build_app` creates the page (layout.py) inside one gr.Blocks and wires it here, as gradio's own
demos do. Model-bound events share one queue (`concurrency_id="model"`) so a class queues
instead of thrashing the machine; everything else runs unqueued and private.
"""
from __future__ import annotations

import gradio as gr

from ..core import playground
from ..engine.presets import PRESETS
from ..engine.settings import current as current_deployment
from ..present import render
from ..present.views import View, export_files, playground_drafts_run, playground_run, playground_view, sweep_view
from .gradio_internals import cache_dir, forget_tab
from .handlers import (adopt, intro, play_handler, reset_handler, step_handler, stop_handler, tick_handler,
                       view_handler)
from .layout import Page, build_layout


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

    knobs = [preset, prompt, gamma, temperature, top_k, top_p, kl_budget, seed, max_new, draft_model, target_model,
             page.drafts]  # drafts last: positional /step calls of older clients keep their meaning
    view_outputs = View(timeline, step_card, counters, narration, pq_plot, uniform_plot, residual_plot,
                        history_plot, view_step, message, analytics, analytics_plot, rejections, most_rejected)

    def updates(view: View | None) -> dict:
        return {c: gr.skip() for c in view_outputs} if view is None else dict(zip(view_outputs, view))

    def playing_updates(playing: bool) -> dict:
        return {timer: gr.Timer(active=playing), play_btn: gr.Button(value="Pause" if playing else "Play")}

    def on_step(session_state, notation, preset, prompt, gamma, temperature, top_k, top_p, kl_budget, seed,
            max_new_tokens, draft_model, target_model, drafts=1, request: gr.Request = None):  # the /step API's parameters
        s, view = step_handler(adopt(session_state, request.session_hash), notation, preset, prompt, gamma, temperature,
                   top_k, top_p, kl_budget, seed, max_new_tokens, draft_model, target_model, drafts)
        return {session: s, **updates(view)}

    def on_tick(s, n, preset, prompt, gamma, temperature, top_k, top_p, kl_budget, seed, max_new_tokens, draft_model,
                target_model, drafts, request: gr.Request):  # one parameter per input: gradio passes a Request
        s, view, playing = tick_handler(adopt(s, request.session_hash), n, preset, prompt, gamma, temperature, top_k,
                                        top_p, kl_budget, seed, max_new_tokens, draft_model, target_model, drafts)
        return {session: s, **updates(view), **playing_updates(playing)}

    def on_play(s, seconds):
        s, playing = play_handler(s)
        return {session: s, timer: gr.Timer(value=float(seconds), active=playing),
            play_btn: gr.Button(value="Pause" if playing else "Play")}

    def on_stop(s):
        s, playing = stop_handler(s)
        return {session: s, **playing_updates(playing)}

    def on_reset(s, n):
        s, view = reset_handler(s, n)
        return {session: s, **updates(view)}

    def on_view(s, n, step):
        s, view = view_handler(s, n, step)
        return {session: s, **updates(view)}

    all_views = [session, *view_outputs]  # a list: the API returns outputs in this order
    model = dict(concurrency_id="model", concurrency_limit=current_deployment().concurrency)  # a class queues, not thrashes
    light = dict(concurrency_limit=None, api_visibility="private")
    light_public = dict(concurrency_limit=None)

    def on_rejection_click(s, n, evt: gr.SelectData):
        row = evt.row_value if evt is not None else None
        return on_view(s, n, row[0] if row else None)

    def on_sweep(s, n):
        figure, status = sweep_view(s, n)
        return figure or gr.skip(), render.message_html(status)

    def on_export(s):
        return export_files(s, cache_dir(demo))
    raw = dict(preprocess=False)  # knobs reach DecodeConfig as sent: refused by name, never rounded or clipped
    step_btn.click(on_step, [session, notation, *knobs], all_views, api_name="step", **model, **raw)
    tick = timer.tick(on_tick, [session, notation, *knobs], [*all_views, timer, play_btn],
              api_visibility="private", **model, **raw)
    play_btn.click(on_play, [session, speed], [session, timer, play_btn], **light)
    reset_btn.click(on_stop, [session], [session, timer, play_btn], cancels=[tick], **light).then(
        on_reset, [session, notation], all_views, api_name="reset", concurrency_limit=None, **raw)
    gr.on([notation.change, view_step.input], on_view, [session, notation, view_step], all_views, **light, **raw)
    notation.change(intro, notation, header, **light)
    show_rejected.change(None, show_rejected, None, api_visibility="private",
                 js="(v) => { document.querySelector('#timeline').classList.toggle('hide-rejected', !v); }")
    example.change(lambda e, p: e or p, [example, prompt], prompt, **light)
    rejections.select(on_rejection_click, [session, notation], all_views, **light).then(
        None, None, None, api_visibility="private",  # the card may be far above: bring it into view
        js="() => { document.querySelector('#step-card')?.scrollIntoView({behavior: 'smooth', block: 'start'}); }")
    sweep_btn.click(on_sweep, [session, notation], [sweep_plot, message], **model, api_visibility="private")
    export_btn.click(on_export, [session], [json_file, csv_file, traces_json], api_name="traces", **light_public)
    wire_playground(pg, notation, light, demo)

    def on_unload(request: gr.Request):  # gradio passes the closed tab's request, no inputs
        forget_tab(demo, request)
    demo.unload(on_unload)
    preset.change(lambda p: gr.Dropdown(choices=list(PRESETS[p].examples) if p in PRESETS else [], value=None),
              preset, example, **light)


def wire_playground(pg: dict, notation, light: dict, demo: gr.Blocks) -> None:
    def on_preset(name, seed):
        if name == "random":
            try:
                target, draft = playground.random_preset(playground.whole_number("seed", seed or 0, 0, playground.MAX_SEED))
            except ValueError as err:
                raise gr.Error(str(err)) from err
        else:
            target, draft = playground.TOY_PRESETS[name]
        return ", ".join(f"{x:g}" for x in target), ", ".join(f"{x:g}" for x in draft)

    def on_edit(tokens, target, draft, kl, n):
        decomposition, mentored, status = playground_view(tokens, target, draft, kl, n)
        return (decomposition or gr.skip(), mentored or gr.skip(), render.message_html(status))

    def on_run(tokens, target, draft, samples, seed, n):
        histogram, summary, status = playground_run(tokens, target, draft, samples, seed, n)
        return histogram or gr.skip(), summary, render.message_html(status)

    edits = [pg["tokens"], pg["target"], pg["draft"], pg["kl"], notation]
    pg["preset"].change(on_preset, [pg["preset"], pg["seed"]], [pg["target"], pg["draft"]], **light)
    gr.on([demo.load, pg["tokens"].change, pg["target"].change, pg["draft"].change, pg["kl"].release, notation.change],
          on_edit, edits, [pg["decomposition"], pg["mentored"], pg["message"]], **light)
    pg["run"].click(on_run, [pg["tokens"], pg["target"], pg["draft"], pg["samples"], pg["seed"], notation],
                    [pg["histogram"], pg["summary"], pg["message"]], **light)
    def on_drafts_run(tokens, target, draft, k, samples, seed, n):
        histogram, acceptance, summary, status = playground_drafts_run(tokens, target, draft, k, samples, seed, n)
        return histogram or gr.skip(), acceptance or gr.skip(), summary, render.message_html(status)

    pg["drafts_run"].click(on_drafts_run, [pg["tokens"], pg["target"], pg["draft"], pg["drafts"], pg["samples"],
                                           pg["seed"], notation],
                           [pg["drafts_histogram"], pg["drafts_acceptance"], pg["drafts_summary"], pg["message"]], **light)
    gr.api(playground_endpoint, api_name="playground", concurrency_limit=current_deployment().concurrency)


def playground_endpoint(target: list[float], draft: list[float], samples: int = 100_000, variant: str = "exact",
                        seed: int = 0) -> dict:
    """Monte Carlo of one speculative round on toy distributions: counts per token, the target
    (`expected`), a chi-square `p_value` against it and the measured `acceptance_rate`."""
    try:
        return playground.simulate(target, draft, samples, variant, seed)
    except ValueError as err:
        raise gr.Error(str(err)) from err
