"""The page's components and where they sit, in groups, one function each; no events (those are wiring.py's).

Components keep the elem_ids docs/architecture.md lists as the web app's contract.
"""
from __future__ import annotations

from dataclasses import dataclass

import gradio as gr

from ..core import playground
from ..core.config import DRAFTS_MAX, DRAFTS_MIN, GAMMA_MAX, TOP_K_OFF, TOP_P_OFF
from ..core.notation import NOTATIONS
from ..engine.decoding.drafters import DEFAULT_DRAFTER, DRAFTERS
from ..engine.models.policy import offered_presets
from ..engine.models.presets import PRESETS, default_preset
from ..present import render
from ..present.debug_panels import DEFAULT_DRAFTS, DEFAULT_GAMMAS, requests_panel, whatif_panel
from ..present.i18n import CATALOGUE, LANGUAGES, tr
from ..present.page_settings import (
    DEFAULT_MAX_NEW_TOKENS,
    DEFAULT_SEED,
    DEFAULT_TEMPERATURE,
    GAMMA_AUTO_POSITION,
    PAGE_MAX_NEW_TOKENS,
)
from ..present.race import race_html
from ..present.views import REJECTION_COLUMNS, Session
from .handlers import SESSION_TTL_S, intro, release_session, what_you_see
from .predict_ui import PredictParts, algorithm_panel, myths_accordion, predict_switch, question_panel
from .share import share_bar

# The page in groups, each made by its own function below and wired by its own function in wiring.py.
# gradio components are not dataclass-comparable: each group keeps identity equality and hashing.

@dataclass(frozen=True, eq=False)
class Toolbar:
    """Above the tabs: the language, classroom mode, the phase reveal, predict mode and Play's pace."""
    lang: object
    classroom: object
    reveal: object
    speed: object
    predict: object    # predict mode (#predict): the round asks before it shows


@dataclass(frozen=True, eq=False)
class Controls:
    """The live tab's buttons and the status line under them."""
    step_btn: object
    play_btn: object
    reset_btn: object
    race_btn: object   # the race (#race-btn, #race): both sides alone, replayed on one clock
    message: object


@dataclass(frozen=True, eq=False)
class Settings:
    """The left column: the prompt, the model pair and every knob of the decoding."""
    prompt: object
    example: object
    preset: object
    gamma: object
    drafts: object     # several drafts at once (#drafts)
    drafter: object    # who proposes: the draft model or prompt lookup (#drafter)
    temperature: object
    kl_scale: object   # a log scale that sets #kl-budget
    kl_budget: object
    kl_note: object
    notation: object
    top_k: object
    top_p: object
    seed: object
    max_new_tokens: object
    draft_model: object
    target_model: object
    header: object


@dataclass(frozen=True, eq=False)
class StepView:
    """The right column's step card, counters, text, race and the figures of the step shown."""
    what: object
    summary: object
    step_card: object
    counters: object
    timeline: object
    race: object
    show_rejected: object
    view_step: object
    narration: object
    pq_plot: object
    uniform_plot: object
    residual_plot: object
    history_plot: object


@dataclass(frozen=True, eq=False)
class AcceptancePanels:
    """In the debugging accordion: what if at other γ and k (#whatif-*), and each run as a request
    of the per-request acceptance-length histogram (#request-*)."""
    curve: object      # a typed per-position curve a₁, a₂, … (empty: the run's)
    cost: object       # a typed cost ratio c (empty: the run's)
    gammas: object
    drafts: object
    run: object
    table: object
    plot: object
    note: object
    histogram: object


@dataclass(frozen=True, eq=False)
class DebugView:
    """The debugging accordion: analytics, what if and per request, the rejections, the gamma sweep and the exports."""
    analytics: object
    analytics_plot: object
    panels: AcceptancePanels
    rejections: object
    most_rejected: object
    sweep_btn: object
    sweep_plot: object
    export_btn: object
    json_file: object
    csv_file: object
    traces_json: object


@dataclass(frozen=True, eq=False)
class Playground:
    """The playground tab: toy p and q, one round's decomposition, Monte Carlo runs, several drafts at once."""
    tab: object
    preset: object
    tokens: object
    target: object
    draft: object
    message: object
    decomposition: object
    samples: object
    seed: object
    run: object
    histogram: object
    summary: object
    kl: object
    mentored: object
    drafts: object
    drafts_run: object
    drafts_histogram: object
    drafts_summary: object
    drafts_acceptance: object


@dataclass(frozen=True, eq=False)
class Page:
    """The components wiring.py connects, by group."""
    session: object
    toolbar: Toolbar
    controls: Controls
    settings: Settings
    step: StepView
    debug: DebugView
    pg: Playground
    timer: object      # Play's clock
    tabs: tuple        # (live tab, playground tab): their labels follow #lang
    share: object      # the link to a step and the recorded runs (app/share.py's ShareBar)
    predict: PredictParts  # predict mode's panel, the algorithm and the misconceptions (app/predict_ui.py)


KL_STEPS = (0.0, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0)  # #kl-scale's positions: 0, then 1-2-5 per decade
CLASSROOM_PACE_S = 2.5                       # Play's seconds per round in classroom mode: time to talk


def notation_choices(lang: str = "en") -> list[tuple[str, str]]:
    """The notation radio's (label, key) pairs: each convention named by its source, in `lang`."""
    return [(tr(lang, f"notation.{key}"), key) for key in NOTATIONS]


def drafter_choices(lang: str = "en") -> list[tuple[str, str]]:
    """The drafter radio's (label, key) pairs in `lang`: the registered drafters that have a label in the locales."""
    return [(tr(lang, f"drafter.{key}"), key) for key in DRAFTERS if f"drafter.{key}" in CATALOGUE["en"]]


def preset_choices(lang: str = "en") -> list[tuple[str, str]]:
    """The model pairs offered here, each "name: what it is" in `lang` (a preset the catalogue lacks keeps
    its own English description)."""
    said = (lambda k: tr(lang, f"preset.{k}") if f"preset.{k}" in CATALOGUE["en"] else PRESETS[k].description)
    return [(f"{k}: {said(k)}", k) for k in offered_presets()]


def toy_choices(lang: str = "en") -> list[tuple[str, str]]:
    """The playground's preset pairs of distributions (and "random"), named in `lang`."""
    return [(tr(lang, f"toy.{name}"), name) for name in [*playground.TOY_PRESETS, "random"]]


def i18n() -> gr.I18n:
    """The component labels in every language (gradio translates them in the browser; en-US, zh-CN, ja-JP
    fall back to en, zh, ja)."""
    return gr.I18n(**{code: dict(CATALOGUE[code]) for code in LANGUAGES})


def build_layout() -> Page:
    """Every component of the page, created inside the caller's gr.Blocks, by group."""
    T = i18n()
    session = gr.State(Session(), time_to_live=SESSION_TTL_S, delete_callback=release_session)
    gr.Markdown(T("title"), elem_id="title")
    toolbar = toolbar_row(T)
    with gr.Tab(T("tab.live"), elem_id="live") as live_tab:
        controls = controls_row(T)
        share = share_bar(T)
        with gr.Row(elem_id="main-row"):
            settings = settings_column(T)
            with gr.Column(scale=2, elem_id="results"):
                step, predict = step_view(T, settings.prompt.value)
                debug = debug_view(T)
    pg = playground_tab(T)
    timer = gr.Timer(0.8, active=False)
    return Page(session=session, toolbar=toolbar, controls=controls, settings=settings, step=step, debug=debug,
                pg=pg, timer=timer, tabs=(live_tab, pg.tab), share=share, predict=predict)


def toolbar_row(T) -> Toolbar:
    with gr.Row(elem_id="toolbar"):
        lang = gr.Radio([(v, k) for k, v in LANGUAGES.items()], value="en", label=T("lbl.lang"), elem_id="lang",
                        show_label=False, container=False, scale=0, min_width=270)
        classroom = gr.Checkbox(False, label=T("lbl.classroom"), elem_id="classroom", container=False, scale=0,
                                min_width=160)
        reveal = gr.Checkbox(False, label=T("lbl.reveal"), elem_id="reveal", container=False, scale=0, min_width=160)
        predict = predict_switch(T)
        speed = gr.Slider(0.2, 5.0, value=0.8, step=0.1, label=T("lbl.speed"), elem_id="speed", scale=1,
                          min_width=200)
    return Toolbar(lang=lang, classroom=classroom, reveal=reveal, speed=speed, predict=predict)


def controls_row(T) -> Controls:
    with gr.Row(elem_id="controls"):
        step_btn = gr.Button(T("btn.step"), variant="primary", elem_id="step", scale=0)
        play_btn = gr.Button(T("btn.play"), elem_id="play", scale=0)
        reset_btn = gr.Button(T("btn.reset"), variant="stop", elem_id="reset", scale=0)
        race_btn = gr.Button(T("btn.race"), elem_id="race-btn", scale=0)
        message = gr.HTML(elem_id="message", min_height=0)
    return Controls(step_btn=step_btn, play_btn=play_btn, reset_btn=reset_btn, race_btn=race_btn, message=message)


def settings_column(T) -> Settings:
    preset0 = default_preset()
    with gr.Column(scale=1, min_width=300, elem_id="settings"):
        prompt = gr.Textbox(label=T("lbl.prompt"), lines=2, elem_id="prompt",
                            value=PRESETS[preset0].examples[0] if PRESETS[preset0].examples else "")
        example = gr.Dropdown(label=T("lbl.examples"), choices=PRESETS[preset0].prompt_choices, value=None,
                              elem_id="examples")
        preset = gr.Dropdown(label=T("lbl.preset"), value=preset0, elem_id="preset", choices=preset_choices())
        gamma = gr.Slider(GAMMA_AUTO_POSITION, GAMMA_MAX, value=4, step=1, label=T("lbl.gamma"), elem_id="gamma")
        drafts = gr.Slider(DRAFTS_MIN, DRAFTS_MAX, value=1, step=1, elem_id="drafts", label=T("lbl.drafts"))
        drafter = gr.Radio(drafter_choices(), value=DEFAULT_DRAFTER, elem_id="drafter", label=T("lbl.drafter"))
        temperature = gr.Slider(0, 2, value=DEFAULT_TEMPERATURE, step=0.05, label=T("lbl.temperature"),
                                elem_id="temperature")
        with gr.Group(elem_id="kl-group"):
            kl_scale = gr.Slider(0, len(KL_STEPS) - 1, value=0, step=1, label=T("lbl.kl_scale"), elem_id="kl-scale")
            kl_budget = gr.Number(0.0, minimum=0, label=T("lbl.kl"), elem_id="kl-budget")
            kl_note = gr.HTML(elem_id="kl-buys", min_height=0)
        notation = gr.Radio(notation_choices(), value="leviathan", label=T("lbl.notation"), elem_id="notation")
        with gr.Accordion(T("lbl.more"), open=False):
            top_k = gr.Number(value=TOP_K_OFF, minimum=0, label=T("lbl.top_k"), elem_id="top-k")
            top_p = gr.Slider(0.05, 1.0, value=TOP_P_OFF, step=0.05, label=T("lbl.top_p"), elem_id="top-p")
            seed = gr.Number(value=DEFAULT_SEED, minimum=0, label=T("lbl.seed"), elem_id="seed")
            max_new_tokens = gr.Slider(1, PAGE_MAX_NEW_TOKENS, value=DEFAULT_MAX_NEW_TOKENS, step=1, label=T("lbl.max_new"),
                                       elem_id="max-new-tokens")
        with gr.Accordion(T("lbl.own_pair"), open=False):
            draft_model = gr.Textbox("", label=T("lbl.draft_model"), elem_id="draft-model",
                                     placeholder=T("lbl.draft_hint"))
            target_model = gr.Textbox("", label=T("lbl.target_model"), elem_id="target-model",
                                      placeholder=T("lbl.target_hint"))
        header = gr.Markdown(intro("leviathan"), elem_id="intro")
    return Settings(prompt=prompt, example=example, preset=preset, gamma=gamma, drafts=drafts, drafter=drafter,
                    temperature=temperature, kl_scale=kl_scale, kl_budget=kl_budget, kl_note=kl_note,
                    notation=notation, top_k=top_k, top_p=top_p, seed=seed, max_new_tokens=max_new_tokens,
                    draft_model=draft_model, target_model=target_model, header=header)


def step_view(T, prompt: str) -> tuple[StepView, PredictParts]:
    """The step view's components, and predict mode's among them (the algorithm beside the card, the question
    under it, the misconceptions after the race)."""
    what = gr.HTML(what_you_see(), elem_id="what-you-see", min_height=0)
    summary = gr.HTML(render.round_summary(None), elem_id="round-summary", min_height=0)
    with gr.Row(elem_id="card-row"):
        step_card = gr.HTML(render.step_card(None), elem_id="step-card", scale=3)
        algorithm = algorithm_panel()
    panel = question_panel()
    counters = gr.HTML(render.counters_html({}, "", False, 0, 0), elem_id="counters")
    timeline = gr.HTML(render.text_view(prompt, []), elem_id="timeline")
    race = gr.HTML(race_html(None), elem_id="race", min_height=0)
    with gr.Row():
        show_rejected = gr.Checkbox(value=True, label=T("lbl.show_rejected"), elem_id="show-rejected", scale=1)
        view_step = gr.Number(label=T("lbl.view_step"), elem_id="view-step", scale=0, min_width=120)
    myths = myths_accordion(T)
    with gr.Accordion(T("lbl.details"), open=False):
        narration = gr.Markdown(render.narration(None), elem_id="narration")
        pq_plot = gr.Plot(label="target vs draft", show_label=False, elem_id="pq-plot")
        uniform_plot = gr.Plot(label="uniform draw", show_label=False, elem_id="uniform-plot")
        residual_plot = gr.Plot(label="residual or bonus", show_label=False, elem_id="residual-plot")
    with gr.Accordion(T("lbl.history"), open=False):
        history_plot = gr.Plot(label="the run so far", show_label=False, elem_id="history-plot")
    return StepView(what=what, summary=summary, step_card=step_card, counters=counters, timeline=timeline,
                    race=race, show_rejected=show_rejected, view_step=view_step, narration=narration,
                    pq_plot=pq_plot, uniform_plot=uniform_plot, residual_plot=residual_plot,
                    history_plot=history_plot), PredictParts(panel=panel, algorithm=algorithm, myths=myths)


def debug_view(T) -> DebugView:
    with gr.Accordion(T("lbl.debug"), open=False, elem_id="debug"):
        analytics = gr.HTML(render.analytics_html({}), elem_id="analytics")
        analytics_plot = gr.Plot(show_label=False, elem_id="analytics-plot")
        panels = acceptance_panels(T)
        with gr.Row(elem_id="rejections-row"):
            rejections = gr.Dataframe(headers=REJECTION_COLUMNS, value=[], interactive=False, max_height=320, wrap=True,
                                      label=T("lbl.rejections"), elem_id="rejections", scale=3, min_width=260)
            most_rejected = gr.HTML(render.most_rejected_html([]), elem_id="most-rejected", min_height=0)
        sweep_btn = gr.Button(T("btn.sweep"), elem_id="sweep")
        sweep_plot = gr.Plot(show_label=False, elem_id="sweep-plot")
        with gr.Row():
            export_btn = gr.Button(T("btn.export"), elem_id="export")
            json_file = gr.File(label=T("lbl.json"), elem_id="export-json")
            csv_file = gr.File(label=T("lbl.csv"), elem_id="export-csv")
        traces_json = gr.JSON(visible=False, elem_id="traces-json")
    return DebugView(analytics=analytics, analytics_plot=analytics_plot, panels=panels, rejections=rejections,
                     most_rejected=most_rejected, sweep_btn=sweep_btn, sweep_plot=sweep_plot, export_btn=export_btn,
                     json_file=json_file, csv_file=csv_file, traces_json=traces_json)


def acceptance_panels(T) -> AcceptancePanels:
    """The what-if panel (#whatif-panel) and the per-request panel (#request-panel), each in a group."""
    with gr.Group(elem_id="whatif-panel"):
        gr.Markdown(T("wi.head"))
        with gr.Row(elem_id="whatif-settings"):
            curve = gr.Textbox("", label=T("wi.curve"), placeholder="0.9, 0.75, 0.6", elem_id="whatif-curve",
                               max_lines=1, scale=3, min_width=220)
            cost = gr.Textbox("", label=T("wi.cost"), placeholder="0.1", elem_id="whatif-cost", max_lines=1,
                              scale=2, min_width=180)
            gammas = gr.Textbox(DEFAULT_GAMMAS, label=T("wi.gammas"), elem_id="whatif-gammas", max_lines=1, scale=1,
                                min_width=140)
            drafts = gr.Textbox(DEFAULT_DRAFTS, label=T("wi.drafts"), elem_id="whatif-drafts", max_lines=1, scale=1,
                                min_width=140)
        run = gr.Button(T("wi.run"), elem_id="whatif-run")
        table = gr.HTML(whatif_panel(None, [], "", "", DEFAULT_GAMMAS, DEFAULT_DRAFTS)[0], elem_id="whatif-table",
                        min_height=0)
        plot = gr.Plot(show_label=False, elem_id="whatif-plot")
    with gr.Group(elem_id="request-panel"):
        gr.Markdown(T("rq.head"))
        note = gr.HTML(requests_panel([])[0], elem_id="request-note", min_height=0)
        histogram = gr.Plot(show_label=False, elem_id="request-histogram")
    return AcceptancePanels(curve=curve, cost=cost, gammas=gammas, drafts=drafts, run=run, table=table, plot=plot,
                            note=note, histogram=histogram)


def playground_drafts_section(T) -> dict:
    """Several drafts at once on the same toy p and q: the exact rule, the merged shortcut, acceptance vs k."""
    gr.Markdown(T("pg.drafts_intro"))
    with gr.Row():
        k = gr.Slider(1, DRAFTS_MAX, value=2, step=1, label=T("pg.drafts_k"), elem_id="pg-drafts")
        run = gr.Button(T("pg.drafts_run"), elem_id="pg-drafts-run")
    histogram = gr.Plot(show_label=False, elem_id="pg-drafts-histogram")
    summary = gr.Markdown(elem_id="pg-drafts-summary")
    acceptance = gr.Plot(show_label=False, elem_id="pg-drafts-acceptance")
    return dict(drafts=k, drafts_run=run, drafts_histogram=histogram, drafts_summary=summary, drafts_acceptance=acceptance)


def playground_tab(T) -> Playground:
    """The playground's components (the proof you can watch), by name."""
    first = next(iter(playground.TOY_PRESETS))
    target0, draft0 = playground.TOY_PRESETS[first]
    fmt = (lambda xs: ", ".join(f"{x:g}" for x in xs))
    with gr.Tab(T("tab.playground"), elem_id="playground") as tab:
        gr.Markdown(T("pg.intro"))
        with gr.Row():
            preset = gr.Dropdown(toy_choices(), value=first, label=T("pg.preset"), elem_id="pg-preset")
            tokens = gr.Textbox(", ".join(playground.TOY_TOKENS), label=T("pg.tokens"), elem_id="pg-tokens")
        with gr.Row():
            target = gr.Textbox(fmt(target0), label=T("pg.target"), elem_id="pg-target")
            draft = gr.Textbox(fmt(draft0), label=T("pg.draft"), elem_id="pg-draft")
        message = gr.HTML(elem_id="pg-message")
        decomposition = gr.Plot(show_label=False, elem_id="pg-decomposition")
        with gr.Row():
            samples = gr.Slider(1_000, playground.MAX_SAMPLES, value=100_000, step=1_000, label=T("pg.samples"),
                                elem_id="pg-samples")
            seed = gr.Number(0, minimum=0, label=T("pg.seed"), elem_id="pg-seed")
            run = gr.Button(T("pg.run"), variant="primary", elem_id="pg-run")
        histogram = gr.Plot(show_label=False, elem_id="pg-histogram")
        summary = gr.Markdown(elem_id="pg-summary")
        kl = gr.Slider(0, 1, value=0.1, step=0.01, label=T("pg.kl"), elem_id="pg-kl")
        mentored = gr.Plot(show_label=False, elem_id="pg-mentored")
        drafts = playground_drafts_section(T)
    return Playground(**drafts, tab=tab, preset=preset, tokens=tokens, target=target, draft=draft, message=message,
                      decomposition=decomposition, samples=samples, seed=seed, run=run, histogram=histogram,
                      summary=summary, kl=kl, mentored=mentored)
