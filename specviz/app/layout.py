"""The page's components and where they sit: one function, no events (those are wiring.py's).

Components keep the elem_ids the README lists as the web app's contract.
"""
from __future__ import annotations

from dataclasses import dataclass

import gradio as gr

from ..core import playground
from ..core.config import DRAFTS_MAX, DRAFTS_MIN, GAMMA_MAX, GAMMA_MIN, TOP_K_OFF, TOP_P_OFF
from ..core.notation import NOTATIONS
from ..engine.presets import PRESETS, default_preset, offered_presets
from ..present import render
from ..present.views import REJECTION_COLUMNS, Session
from .handlers import SESSION_TTL_S, intro, release_session


@dataclass(frozen=True)
class Page:
    """The components wiring.py connects (gradio components are not dataclass-comparable: eq off)."""
    session: object
    step_btn: object
    play_btn: object
    reset_btn: object
    message: object
    prompt: object
    example: object
    preset: object
    gamma: object
    temperature: object
    kl_budget: object
    notation: object
    top_k: object
    top_p: object
    seed: object
    max_new: object
    speed: object
    draft_model: object
    target_model: object
    header: object
    step_card: object
    timeline: object
    show_rejected: object
    view_step: object
    counters: object
    narration: object
    pq_plot: object
    uniform_plot: object
    residual_plot: object
    history_plot: object
    analytics: object
    analytics_plot: object
    rejections: object
    most_rejected: object
    sweep_btn: object
    sweep_plot: object
    export_btn: object
    json_file: object
    csv_file: object
    traces_json: object
    pg: object
    timer: object
    drafts: object = None   # several drafts at once (#drafts)

    __hash__ = object.__hash__


def build_layout() -> Page:
    """Every component of the page, created inside the caller's gr.Blocks, by name."""
    preset0 = default_preset()
    if True:
        session = gr.State(Session(), time_to_live=SESSION_TTL_S, delete_callback=release_session)
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
                preset = gr.Dropdown(label="Model pair", choices=[(f"{k}: {PRESETS[k].description}", k) for k in offered_presets()],
                                     value=preset0, elem_id="preset")
                gamma = gr.Slider(GAMMA_MIN, GAMMA_MAX, value=4, step=1, label="γ: tokens drafted per step", elem_id="gamma")
                drafts = gr.Slider(DRAFTS_MIN, DRAFTS_MAX, value=1, step=1, elem_id="drafts",
                                   label="k: drafts per step (> 1: k chains verified as a token tree)")
                temperature = gr.Slider(0, 2, value=1.0, step=0.05, label="temperature (0 = greedy)", elem_id="temperature")
                kl_budget = gr.Slider(0, 2, value=0.0, step=0.01, elem_id="kl-budget",
                                      label="KL budget (0 = exact; > 0 = mentored decoding, LOSSY)")
                notation = gr.Radio([(v[2], k) for k, v in NOTATIONS.items()], value="leviathan",
                                    label="Notation", elem_id="notation")
                with gr.Accordion("More settings", open=False):
                    top_k = gr.Number(value=TOP_K_OFF, minimum=0, label=f"top-k ({TOP_K_OFF} = off)", elem_id="top-k")
                    top_p = gr.Slider(0.05, 1.0, value=TOP_P_OFF, step=0.05, label=f"top-p ({TOP_P_OFF:g} = off)", elem_id="top-p")
                    seed = gr.Number(value=0, minimum=0, label="random seed of the run", elem_id="seed")
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
                    view_step = gr.Number(label="showing step", elem_id="view-step", scale=0, min_width=120)
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
        return Page(session=session, step_btn=step_btn, play_btn=play_btn, reset_btn=reset_btn, message=message, prompt=prompt, example=example, preset=preset, gamma=gamma, temperature=temperature, kl_budget=kl_budget, notation=notation, top_k=top_k, top_p=top_p, seed=seed, max_new=max_new, speed=speed, draft_model=draft_model, target_model=target_model, header=header, step_card=step_card, timeline=timeline, show_rejected=show_rejected, view_step=view_step, counters=counters, narration=narration, pq_plot=pq_plot, uniform_plot=uniform_plot, residual_plot=residual_plot, history_plot=history_plot, analytics=analytics, analytics_plot=analytics_plot, rejections=rejections, most_rejected=most_rejected, sweep_btn=sweep_btn, sweep_plot=sweep_plot, export_btn=export_btn, json_file=json_file, csv_file=csv_file, traces_json=traces_json, pg=pg, timer=timer, drafts=drafts)


def playground_drafts_section() -> dict:
    """Several drafts at once on the same toy p and q: the exact rule, the merged shortcut, acceptance vs k."""
    gr.Markdown("### Several drafts at once\nk candidates drawn independently from the draft, tried in a random order; "
                "after each rejection the target's distribution becomes the residual norm(max(0, p − q)) and the next "
                "candidate is judged against it. Merging identical candidates into one try looks harmless and is not.")
    with gr.Row():
        k = gr.Slider(1, DRAFTS_MAX, value=2, step=1, label="k: drafts", elem_id="pg-drafts")
        run = gr.Button("Run the rounds with k drafts", elem_id="pg-drafts-run")
    histogram = gr.Plot(show_label=False, elem_id="pg-drafts-histogram")
    summary = gr.Markdown(elem_id="pg-drafts-summary")
    acceptance = gr.Plot(show_label=False, elem_id="pg-drafts-acceptance")
    return dict(drafts=k, drafts_run=run, drafts_histogram=histogram, drafts_summary=summary, drafts_acceptance=acceptance)


def playground_tab() -> dict:
    """The playground's components (the proof you can watch), by name."""
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
            seed = gr.Number(0, minimum=0, label="random seed", elem_id="pg-seed")
            run = gr.Button("Run the rounds", variant="primary", elem_id="pg-run")
        histogram = gr.Plot(show_label=False, elem_id="pg-histogram")
        summary = gr.Markdown(elem_id="pg-summary")
        kl = gr.Slider(0, 1, value=0.1, step=0.01, label="mentored decoding: KL budget (nats)", elem_id="pg-kl")
        mentored = gr.Plot(show_label=False, elem_id="pg-mentored")
        drafts = playground_drafts_section()
    return dict(**drafts, preset=preset, tokens=tokens, target=target, draft=draft, message=message, decomposition=decomposition,
                samples=samples, seed=seed, run=run, histogram=histogram, summary=summary, kl=kl, mentored=mentored)
