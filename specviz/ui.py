"""The Gradio app: layout and event wiring only. Runs live in specviz.run, pictures in figures/render.

Every tab keeps its own `Session` in gr.State: its `ComparedRun` (decoders, generators, traces)
and a lock that serialises that tab's events (Step, Play ticks, Reset), so tabs never share state
or random streams. A closed tab's session is freed at once (an unload event), an idle one after
SESSION_TTL_S; only the specviz.run.WARM_RUNS most recently stepped runs keep their KV caches.
"""
from __future__ import annotations

import os

import gradio as gr

from . import playground, render
from .config import GAMMA_MAX, GAMMA_MIN, TOP_K_OFF, TOP_P_OFF
from .engine import DecodingFinished
from .models import PRESETS, ModelLoadError, default_preset, load_pair
from .notation import NOTATIONS, letters
from .render import Status
from .views import (REJECTION_COLUMNS, Session, View, advance, build_view, export_files, playground_run, playground_view,
                    settings_from, sweep_view, with_lock)

SESSION_TTL_S = 15 * 60      # an idle tab's run is freed after this long (gr.State time_to_live)
SESSION_CAPACITY = 1000      # gradio's per-session copies of the page, least recently used out
QUEUE_STATUS_S = 1.0         # queued visitors' positions refresh each second, not after every event
MODEL_CONCURRENCY = int(os.environ.get("SPECVIZ_CONCURRENCY", "2"))  # model-bound events at once, all tabs together


def _step(session: Session, notation: str, knobs) -> tuple[View, Status]:
    try:
        status = advance(session, settings_from(*knobs))
    except (ValueError, ModelLoadError, DecodingFinished) as err:
        status = Status("error", str(err))
    except RuntimeError as err:  # e.g. CUDA out of memory
        status = Status("error", f"the models failed: {str(err).splitlines()[0]}")
    return build_view(session, notation, status), status


@with_lock
def step_handler(session, notation, *knobs):
    """Step: one round of the session's run."""
    view, _ = _step(session, notation, knobs)
    return session, view


@with_lock
def tick_handler(session, notation, *knobs):
    """A Play tick: a step, unless Pause or Reset came first; stops on the end or an error."""
    if not session.playing:
        return session, None, False
    view, status = _step(session, notation, knobs)
    if status.error or session.run is None or session.run.finished:
        session.playing = False
    return session, view, session.playing


@with_lock
def play_handler(session):
    session.playing = not session.playing
    return session, session.playing


@with_lock
def stop_handler(session):
    session.playing = False
    return session, False


@with_lock
def reset_handler(session, notation):
    session.playing, session.run, session.viewing = False, None, None
    return session, build_view(session, notation, Status("info", "Reset: a fresh run starts with the next Step."))


@with_lock
def view_handler(session, notation, step):
    if session.traces and step is not None and 1 <= int(step) <= len(session.traces):
        session.viewing = int(step)
    return session, build_view(session, notation)


# ------------------------------------------------------------------ layout

PAGE_JS = """
() => {
  const showStep = (chip) => {
    const input = document.querySelector('#view-step input');
    if (!chip || !input) return;
    input.value = chip.dataset.step;
    input.dispatchEvent(new Event('input', {bubbles: true}));
  };
  document.addEventListener('click', (e) => showStep(e.target.closest('#timeline .chip')));
  document.addEventListener('keydown', (e) => {
    const chip = e.target.closest && e.target.closest('#timeline .chip');
    if (chip && (e.key === 'Enter' || e.key === ' ')) { e.preventDefault(); showStep(chip); return; }
    const typing = ['INPUT', 'TEXTAREA', 'SELECT'].includes(e.target.tagName) || e.target.isContentEditable;
    if (typing || e.ctrlKey || e.metaKey || e.altKey) return;
    const click = (id) => document.querySelector(id)?.click();
    if (e.key === 's') click('#step');
    if (e.key === 'p') click('#play');
  });
  new MutationObserver(() => {  // keep the newest tokens in view inside the bounded text area
    const box = document.querySelector('#timeline .text-view');
    if (box && !box.querySelector('.selected:not(:last-child)')) box.scrollTop = box.scrollHeight;
    if (window.innerWidth < 700 && document.activeElement?.id !== 'view-step') {
      const card = document.querySelector('#step-card .card:not(.empty)');
      const bar = document.querySelector('#controls');
      if (card && bar && card.dataset.seen !== card.textContent.length.toString()) {
        card.dataset.seen = card.textContent.length.toString();
        window.scrollTo({top: card.getBoundingClientRect().top + window.scrollY - bar.offsetHeight - 4});
      }
    }
  }).observe(document.body, {childList: true, subtree: true});
}
"""

CSS = """
.gradio-container { overflow: clip !important; }  /* 'hidden' would make it the scroller and break sticky */
#controls { position: sticky; top: 0; z-index: 20; background: var(--body-background-fill); padding: 4px 0;
            border-bottom: 1px solid #ccc; }
#controls { flex-wrap: nowrap; align-items: center; gap: 8px; }
#controls button { min-width: 70px; max-width: 110px; max-height: 44px; }
#controls #message { flex: 1 1 auto; min-width: 0; font-size: 13px; }
#step { color: #ffffff; background: #1a4f8b; }
#title h2 { margin: 0; font-size: 20px; }
.card { font-size: 14px; line-height: 1.35; }
.card .card-head { font-size: 15px; margin-bottom: 2px; }
.card .phase { margin: 3px 0; }
.card table { border-collapse: collapse; width: 100%; margin: 0; }
.card .pair { white-space: nowrap; }
.card td, .card th { padding: 1px 6px; border-bottom: 1px solid #ddd; text-align: left; font-size: 13px; vertical-align: middle; }
.card code, .text-view { font-family: ui-monospace, monospace; }
.card .muted, .muted { color: #555; }
.card .option { display: inline-block; margin-right: 10px; white-space: nowrap; }
.card .option.chosen { font-weight: bold; outline: 2px solid #1F5FA0; padding: 0 3px; }
.badge { display: inline-block; padding: 0 6px; border: 1px solid #555; border-radius: 4px; font-size: 12px; }
.badge.lossy { background: #B8420A; color: #fff; border-color: #B8420A; font-weight: bold; }
#timeline .text-view { white-space: pre-wrap; max-height: 7.5em; overflow-y: auto; font-size: 15px; line-height: 1.6;
                       border: 1px solid #ccc; padding: 4px 6px; }
#timeline .prompt { color: #555; }
#timeline .step-group.selected { outline: 2px solid #222; }
#timeline .chip:focus { outline: 3px solid #1a4f8b; }
#timeline.hide-rejected .chip.rejected { display: none; }
#timeline .legend { font-size: 12px; color: #444; margin-top: 2px; }
.counters table { font-size: 13px; } .counters td, .counters th { padding: 0 8px; }
.counters { font-size: 13px; }
.modebar-container { display: none !important; }
@media (max-width: 700px) {
  #main-row { flex-direction: column-reverse !important; }
  .card td, .card th { font-size: 12px; padding: 1px 3px; }
  .card .bar { width: 30px !important; } .card .track { width: 50px !important; }
  .card .ratio { display: none; } .card .pair { white-space: nowrap; }
  #title h2 { font-size: 16px; }
}
"""

INTRO = """A small **draft** model guesses γ tokens; the large **target** model checks all of them in **one**
forward pass. Each guess is kept when a uniform draw u falls below min(1, {t}/{d}); at the first rejection a
replacement is drawn from the *residual* norm(max(0, {t} − {d})); if all are kept, the target adds a *bonus*
token. The output is distributed **exactly** as the target alone would sample it (at temperature 0 this reduces
to "keep drafts while the argmaxes agree"), yet each target pass can yield several tokens.
Keys: <kbd>s</kbd> Step, <kbd>p</kbd> Play/Pause; Tab + Enter on a token shows its step."""


def intro(notation: str) -> str:
    t, d = letters(notation)
    return INTRO.format(t=t, d=d)


def build_app() -> gr.Blocks:
    preset0 = default_preset()
    with gr.Blocks(title="specviz: speculative decoding, step by step") as demo:
        session = gr.State(Session(), time_to_live=SESSION_TTL_S, delete_callback=Session.release)
        gr.Markdown("## specviz — speculative decoding, step by step", elem_id="title")
        with gr.Row(elem_id="controls"):
            step_btn = gr.Button("Step", variant="primary", elem_id="step", scale=0)
            play_btn = gr.Button("Play", elem_id="play", scale=0)
            reset_btn = gr.Button("Reset", variant="stop", elem_id="reset", scale=0)
            message = gr.HTML(elem_id="message", min_height=0)
        with gr.Tab("Live models", elem_id="live"), gr.Row(elem_id="main-row"):
            with gr.Column(scale=1, min_width=300):
                prompt = gr.Textbox(label="Prompt", value=PRESETS[preset0].examples[0] if PRESETS[preset0].examples else "",
                                    lines=2, elem_id="prompt")
                example = gr.Dropdown(label="Example prompts", choices=list(PRESETS[preset0].examples), value=None,
                                      elem_id="examples")
                preset = gr.Dropdown(label="Model pair", choices=[(f"{k}: {v.description}", k) for k, v in PRESETS.items()],
                                     value=preset0, elem_id="preset")
                gamma = gr.Slider(GAMMA_MIN, GAMMA_MAX, value=4, step=1, label="γ: tokens drafted per step", elem_id="gamma")
                temperature = gr.Slider(0, 2, value=1.0, step=0.05, label="temperature (0 = greedy)", elem_id="temperature")
                kl_budget = gr.Slider(0, 2, value=0.0, step=0.01, elem_id="kl-budget",
                                      label="KL budget (0 = exact; > 0 = mentored decoding, LOSSY)")
                notation = gr.Radio([(v[2], k) for k, v in NOTATIONS.items()], value="leviathan",
                                    label="Notation", elem_id="notation")
                with gr.Accordion("More settings", open=False):
                    top_k = gr.Number(value=TOP_K_OFF, precision=0, minimum=0, label=f"top-k ({TOP_K_OFF} = off)", elem_id="top-k")
                    top_p = gr.Slider(0.05, 1.0, value=TOP_P_OFF, step=0.05, label=f"top-p ({TOP_P_OFF:g} = off)", elem_id="top-p")
                    seed = gr.Number(value=0, precision=0, minimum=0, label="random seed of the run", elem_id="seed")
                    max_new = gr.Slider(1, 200, value=80, step=1, label="max new tokens", elem_id="max-new-tokens")
                    speed = gr.Slider(0.2, 3.0, value=0.8, step=0.1, label="Play: seconds per step", elem_id="speed")
                with gr.Accordion("Your own pair (hub ids or local folders; replace the preset)", open=False):
                    draft_model = gr.Textbox("", label="draft model", placeholder="e.g. HuggingFaceTB/SmolLM2-135M",
                                             elem_id="draft-model")
                    target_model = gr.Textbox("", label="target model", placeholder="e.g. HuggingFaceTB/SmolLM2-1.7B",
                                              elem_id="target-model")
                header = gr.Markdown(intro("leviathan"), elem_id="intro")
            with gr.Column(scale=2):
                step_card = gr.HTML(render.step_card(None), elem_id="step-card")
                timeline = gr.HTML(render.text_view(prompt.value, []), elem_id="timeline")
                with gr.Row():
                    show_rejected = gr.Checkbox(value=True, label="show rejected drafts (struck through)",
                                                elem_id="show-rejected", scale=1)
                    view_step = gr.Number(label="showing step", precision=0, elem_id="view-step", scale=0, min_width=120)
                counters = gr.HTML(render.counters_html({}, "", False, 0, 0), elem_id="counters")
                with gr.Accordion("Full distributions and the story in words", open=False):
                    narration = gr.Markdown(render.narration(None), elem_id="narration")
                    pq_plot = gr.Plot(label="target vs draft", show_label=False, elem_id="pq-plot")
                    uniform_plot = gr.Plot(label="uniform draw", show_label=False, elem_id="uniform-plot")
                    residual_plot = gr.Plot(label="residual or bonus", show_label=False, elem_id="residual-plot")
                with gr.Accordion("The run so far", open=False):
                    history_plot = gr.Plot(label="the run so far", show_label=False, elem_id="history-plot")
                with gr.Accordion("Debug acceptance: metrics, rejections, temperature sweep, export", open=False,
                                  elem_id="debug"):
                    analytics = gr.HTML(render.analytics_html({}), elem_id="analytics")
                    analytics_plot = gr.Plot(show_label=False, elem_id="analytics-plot")
                    with gr.Row():
                        rejections = gr.Dataframe(headers=REJECTION_COLUMNS, value=[], interactive=False, max_height=320,
                                                  label="every rejection (click a row to see its step)",
                                                  elem_id="rejections", scale=3)
                        most_rejected = gr.HTML(render.most_rejected_html([]), elem_id="most-rejected")
                    sweep_btn = gr.Button("Temperature sweep on the current context", elem_id="sweep")
                    sweep_plot = gr.Plot(show_label=False, elem_id="sweep-plot")
                    with gr.Row():
                        export_btn = gr.Button("Export the run", elem_id="export")
                        json_file = gr.File(label="traces (JSON)", elem_id="export-json")
                        csv_file = gr.File(label="tokens (CSV)", elem_id="export-csv")
                    traces_json = gr.JSON(visible=False, elem_id="traces-json")
        pg = playground_tab()
        timer = gr.Timer(0.8, active=False)

        knobs = [preset, prompt, gamma, temperature, top_k, top_p, kl_budget, seed, max_new, draft_model, target_model]
        view_outputs = View(timeline, step_card, counters, narration, pq_plot, uniform_plot, residual_plot,
                            history_plot, view_step, message, analytics, analytics_plot, rejections, most_rejected)

        def updates(view: View | None) -> dict:
            return {c: gr.skip() for c in view_outputs} if view is None else dict(zip(view_outputs, view))

        def playing_updates(playing: bool) -> dict:
            return {timer: gr.Timer(active=playing), play_btn: gr.Button(value="Pause" if playing else "Play")}

        def on_step(session_state, notation, preset, prompt, gamma, temperature, top_k, top_p, kl_budget, seed,
                    max_new_tokens, draft_model, target_model):  # the names are the /step API's parameters
            s, view = step_handler(session_state, notation, preset, prompt, gamma, temperature, top_k, top_p,
                                   kl_budget, seed, max_new_tokens, draft_model, target_model)
            return {session: s, **updates(view)}

        def on_tick(s, n, *k):
            s, view, playing = tick_handler(s, n, *k)
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
        model = dict(concurrency_id="model", concurrency_limit=MODEL_CONCURRENCY)  # a class queues, not thrashes
        light = dict(concurrency_limit=None, api_visibility="private")
        light_public = dict(concurrency_limit=None)

        def on_rejection_click(s, n, evt: gr.SelectData):
            row = evt.row_value if evt is not None else None
            return on_view(s, n, row[0] if row else None)

        def on_sweep(s, n):
            figure, status = sweep_view(s, n)
            return figure or gr.skip(), render.message_html(status)

        def on_export(s):
            return export_files(s)
        step_btn.click(on_step, [session, notation, *knobs], all_views, api_name="step", **model)
        tick = timer.tick(on_tick, [session, notation, *knobs], [*all_views, timer, play_btn],
                          api_visibility="private", **model)
        play_btn.click(on_play, [session, speed], [session, timer, play_btn], **light)
        reset_btn.click(on_stop, [session], [session, timer, play_btn], cancels=[tick], **light).then(
            on_reset, [session, notation], all_views, api_name="reset", concurrency_limit=None)
        gr.on([notation.change, view_step.input], on_view, [session, notation, view_step], all_views, **light)
        notation.change(intro, notation, header, **light)
        show_rejected.change(None, show_rejected, None, api_visibility="private",
                             js="(v) => { document.querySelector('#timeline').classList.toggle('hide-rejected', !v); }")
        example.change(lambda e, p: e or p, [example, prompt], prompt, **light)
        rejections.select(on_rejection_click, [session, notation], all_views, **light)
        sweep_btn.click(on_sweep, [session, notation], [sweep_plot, message], **model, api_visibility="private")
        export_btn.click(on_export, [session], [json_file, csv_file, traces_json], api_name="traces", **light_public)
        wire_playground(pg, notation, light, demo)

        def on_unload(request: gr.Request):  # gradio passes the closed tab's request, no inputs
            forget_tab(demo, request)
        demo.unload(on_unload)
        preset.change(lambda p: gr.Dropdown(choices=list(PRESETS[p].examples) if p in PRESETS else [], value=None),
                      preset, example, **light)
    return demo


def forget_tab(demo: gr.Blocks, request: gr.Request) -> None:
    """A tab closed (its heartbeat ended): free its run and gradio's copy of its page now.
    Gradio alone would keep a closed tab's state for an hour, whatever its time_to_live."""
    holder = demo.state_holder
    holder.delete_state(request.session_hash)  # calls Session.release
    with holder.lock:
        holder.session_data.pop(request.session_hash, None)
        holder.time_last_used.pop(request.session_hash, None)


def playground_tab() -> dict:
    """The playground's components (issue: the proof you can watch), by name."""
    first = next(iter(playground.TOY_PRESETS))
    target0, draft0 = playground.TOY_PRESETS[first]
    fmt = (lambda xs: ", ".join(f"{x:g}" for x in xs))
    with gr.Tab("Playground: the proof", elem_id="playground"):
        gr.Markdown("Two distributions over a few named tokens, no model: watch why speculative sampling's output is "
                    "**exactly** the target's, and what two common shortcuts get wrong. Weights are renormalised.")
        with gr.Row():
            preset = gr.Dropdown([*playground.TOY_PRESETS, "random"], value=first, label="preset", elem_id="pg-preset")
            tokens = gr.Textbox(", ".join(playground.TOY_TOKENS), label="token names (comma separated)", elem_id="pg-tokens")
        with gr.Row():
            target = gr.Textbox(fmt(target0), label="target weights", elem_id="pg-target")
            draft = gr.Textbox(fmt(draft0), label="draft weights", elem_id="pg-draft")
        message = gr.HTML(elem_id="pg-message")
        decomposition = gr.Plot(show_label=False, elem_id="pg-decomposition")
        with gr.Row():
            samples = gr.Slider(1_000, playground.MAX_SAMPLES, value=100_000, step=1_000, label="rounds",
                                elem_id="pg-samples")
            seed = gr.Number(0, precision=0, minimum=0, label="random seed", elem_id="pg-seed")
            run = gr.Button("Run the rounds", variant="primary", elem_id="pg-run")
        histogram = gr.Plot(show_label=False, elem_id="pg-histogram")
        summary = gr.Markdown(elem_id="pg-summary")
        kl = gr.Slider(0, 1, value=0.1, step=0.01, label="mentored decoding: KL budget (nats)", elem_id="pg-kl")
        mentored = gr.Plot(show_label=False, elem_id="pg-mentored")
    return dict(preset=preset, tokens=tokens, target=target, draft=draft, message=message, decomposition=decomposition,
                samples=samples, seed=seed, run=run, histogram=histogram, summary=summary, kl=kl, mentored=mentored)


def wire_playground(pg: dict, notation, light: dict, demo: gr.Blocks) -> None:
    def on_preset(name, seed):
        target, draft = (playground.random_preset(int(seed or 0)) if name == "random" else playground.TOY_PRESETS[name])
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
    gr.api(playground_endpoint, api_name="playground", concurrency_limit=MODEL_CONCURRENCY)


def playground_endpoint(target: list[float], draft: list[float], samples: int = 100_000, variant: str = "exact",
                        seed: int = 0) -> dict:
    """Monte Carlo of one speculative round on toy distributions: counts per token, the target
    (`expected`), a chi-square `p_value` against it and the measured `acceptance_rate`."""
    try:
        return playground.simulate(target, draft, samples, variant, seed)
    except ValueError as err:
        raise gr.Error(str(err)) from err


def launch(demo: gr.Blocks | None = None, **kwargs):
    os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
    try:  # load the default pair before the first visitor arrives; a failure shows on the first Step
        load_pair(default_preset())
    except ModelLoadError as err:
        print(f"warning: {err}")
    demo = demo or build_app()
    # 'auto' messages every queued visitor after every event: with 30 queued on 2 cores that cost
    # throughput (loadtest: 92-97% of the 2-session rate, against 98-99% with 1 s)
    demo.queue(default_concurrency_limit=MODEL_CONCURRENCY, status_update_rate=QUEUE_STATUS_S)
    return demo.launch(js=PAGE_JS, css=CSS, max_file_size="1mb", state_session_capacity=SESSION_CAPACITY, **kwargs)


__all__ = ["build_app", "launch", "Session", "View", "build_view", "step_handler", "tick_handler", "play_handler",
           "stop_handler", "reset_handler", "view_handler", "settings_from", "PAGE_JS", "CSS"]
