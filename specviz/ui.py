"""The Gradio app: layout and event wiring only. Decoding lives in engine, pictures in figures.

Every tab keeps its own `Session` in gr.State: its decoders, generators, traces and a lock that
serialises that tab's events (Step, Play ticks, Reset), so tabs never share state or random
streams and never wait on one another longer than a step. The models are shared read-only.
"""
from __future__ import annotations

import os
import statistics
import threading
import time
from dataclasses import dataclass

import gradio as gr

from . import figures, theory
from .engine import DecodeConfig, DecodingFinished, SpeculativeDecoder, TargetOnlyDecoder
from .models import PRESETS, ModelLoadError, ModelPair, default_preset, load_pair

try:  # ZeroGPU Spaces: model calls run under spaces.GPU; elsewhere the decorator is not there
    import spaces
    gpu = spaces.GPU(duration=60)
except ImportError:
    def gpu(fn):
        return fn


@dataclass(frozen=True)
class Settings:
    preset: str
    prompt: str
    config: DecodeConfig


class Session:
    """One browser tab's run (a plain class: gradio serialises dataclass state values for its config)."""

    def __init__(self):
        self.settings: Settings | None = None
        self.pair: ModelPair | None = None
        self.spec: SpeculativeDecoder | None = None
        self.base: TargetOnlyDecoder | None = None
        self.traces: list = []
        self.viewing: int | None = None      # step shown in the figures (None: the latest)
        self.playing = False
        self.last_engine_s = 0.0
        self.lock = threading.Lock()

    def __deepcopy__(self, memo):  # gr.State copies its initial value per tab: give each a fresh session
        return Session()


@gpu
def _engine_step(spec: SpeculativeDecoder, base: TargetOnlyDecoder):
    """1-3 of one speculative step, then the baseline advanced to the same number of tokens."""
    trace = spec.step()
    while base.counters.tokens < spec.counters.tokens and not base.finished:
        base.step()
    return trace


def start_run(session: Session, settings: Settings, pair: ModelPair | None = None) -> None:
    pair = pair or load_pair(settings.preset)
    session.pair = pair
    session.spec = SpeculativeDecoder(pair, settings.prompt, settings.config)
    session.base = TargetOnlyDecoder(pair, settings.prompt, settings.config)
    session.settings, session.traces, session.viewing = settings, [], None


def advance(session: Session, settings: Settings, pair: ModelPair | None = None) -> str:
    """One step of the session's run (a new run if the settings changed); returns a message."""
    message = ""
    if session.settings != settings or session.spec is None:
        if session.traces:
            message = "Settings changed: started a new run with them."
        start_run(session, settings, pair)
    if session.spec.finished:
        raise DecodingFinished("generation has finished: press Reset (or change a setting) to start again")
    t0 = time.perf_counter()
    trace = _engine_step(session.spec, session.base)
    session.last_engine_s = time.perf_counter() - t0
    session.traces.append(trace)
    session.viewing = None
    if session.spec.finished:
        message = (message + " " if message else "") + "Generation finished (EOS or max new tokens)."
    return message


# ------------------------------------------------------------------ rendering


def counters_html(session: Session) -> str:
    spec, base = session.spec, session.base
    if spec is None or not session.traces:
        return '<div class="counters">Press <b>Step</b> to run one round of speculative decoding.</div>'
    s, b = spec.counters, base.counters
    spec_rate = s.tokens / s.compute_s if s.compute_s else 0.0
    base_rate = b.tokens / b.compute_s if b.compute_s else 0.0
    speedup = spec_rate / base_rate if base_rate else 0.0
    stats = spec.stats()
    alpha = stats["acceptance_rate"]
    draft_ms = sum(t.draft_ms for t in session.traces) / max(s.draft_calls, 1)
    target_ms = 1e3 * b.compute_s / max(b.target_calls, 1)
    c = draft_ms / target_ms if target_ms else 0.0
    gamma = spec.config.gamma
    predicted = theory.expected_speedup(alpha, gamma, c)
    rows = [
        ("tokens", s.tokens, b.tokens),
        ("target forward passes", s.target_calls, b.target_calls),
        ("draft forward passes", s.draft_calls, "—"),
        ("compute time", f"{s.compute_s * 1e3:.0f} ms", f"{b.compute_s * 1e3:.0f} ms"),
        ("tokens / s", f"{spec_rate:.1f}", f"{base_rate:.1f}"),
        ("acceptance rate α", f"{alpha:.2f}", "—"),
        ("mean acceptance length", f"{stats['mean_acceptance_length']:.2f}", "1.00"),
    ]
    body = "".join(f"<tr><td>{name}</td><td><b>{a}</b></td><td>{bb}</td></tr>" for name, a, bb in rows)
    device = session.pair.device.type
    return (f'<div class="counters"><table style="width:100%; font-size:14px">'
            f'<tr><th></th><th>speculative</th><th>target only</th></tr>{body}</table>'
            f'<p style="font-size:15px; margin:6px 0 0 0"><b>speedup ×{speedup:.2f}</b> measured on this hardware '
            f'({device}); Leviathan Thm 3.8 predicts ×{predicted:.2f} for α = {alpha:.2f}, γ = {gamma}, '
            f'c = {c:.2f} (draft/target cost per forward); its best γ here would be '
            f'{theory.optimal_gamma(alpha, c) if c > 0 else "—"}.</p></div>')


def render(session: Session, notation: str):
    """(timeline, counters, pq, uniform, residual, narration, view-step, history) for the step viewed."""
    prompt = session.settings.prompt if session.settings else ""
    if not session.traces:
        blank = figures.empty_figure("press Step to draft and verify")
        return (figures.timeline_html(prompt, []), counters_html(session), blank, blank, blank,
                "*Nothing yet: press **Step**.*", None, blank)
    trace = session.traces[-1] if session.viewing is None else session.traces[session.viewing - 1]
    return (figures.timeline_html(prompt, session.traces, trace.step), counters_html(session),
            figures.pq_figure(trace, notation), figures.uniform_figure(trace, notation),
            figures.residual_figure(trace, notation), figures.narration(trace, notation), trace.step,
            figures.history_figure(session.traces, notation))


def settings_from(preset, prompt, gamma, temperature, top_k, top_p, kl_budget, seed, max_new_tokens) -> Settings:
    if preset not in PRESETS:
        raise ModelLoadError(f"unknown preset {preset!r}")
    config = DecodeConfig(gamma=int(gamma), temperature=float(temperature), top_k=int(top_k or 0) or None,
                          top_p=float(top_p) if top_p is not None and float(top_p) < 1 else None,
                          kl_budget=float(kl_budget), max_new_tokens=int(max_new_tokens), seed=int(seed))
    return Settings(preset=preset, prompt=prompt or "", config=config)


def _message(text: str, kind: str = "info") -> str:
    colour = {"info": "#0072B2", "error": "#D55E00"}[kind]
    return (f'<div class="message-{kind}" style="border-left:4px solid {colour}; padding:4px 10px">{text}</div>'
            if text else "")


# ------------------------------------------------------------------ handlers


def step_handler(session, notation, *knobs, pair: ModelPair | None = None, progress=gr.Progress(track_tqdm=True)):
    """Step: one round of the session's run (loading the pair first if needed, with progress)."""
    session = session if isinstance(session, Session) else Session()
    with session.lock:
        try:
            message = _message(advance(session, settings_from(*knobs), pair))
        except (ValueError, ModelLoadError, DecodingFinished) as err:
            message = _message(str(err), "error")
        except RuntimeError as err:  # e.g. CUDA out of memory
            message = _message(f"the models failed: {err}", "error")
        return (session, *render(session, notation), message)


def tick_handler(session, notation, *knobs):
    session = session if isinstance(session, Session) else Session()
    if not session.playing:  # a tick that was queued before Pause or Reset does nothing
        return (session, *[gr.skip()] * 9, gr.skip(), gr.skip())
    out = step_handler(session, notation, *knobs)
    with session.lock:
        if session.spec is None or session.spec.finished or "message-error" in out[-1]:
            session.playing = False
        playing = session.playing  # Pause or Reset may have landed during the step
    return (*out, gr.Timer(active=playing), gr.Button(value="Pause" if playing else "Play"))


def play_handler(session, speed):
    session = session if isinstance(session, Session) else Session()
    with session.lock:
        session.playing = not session.playing
    return session, gr.Timer(value=float(speed), active=session.playing), gr.Button(value="Pause" if session.playing else "Play")


def stop_handler(session):
    session = session if isinstance(session, Session) else Session()
    with session.lock:
        session.playing = False
    return session, gr.Timer(active=False), gr.Button(value="Play")


def reset_handler(session, notation):
    session = session if isinstance(session, Session) else Session()
    with session.lock:
        session.playing = False
        session.settings, session.spec, session.base, session.traces, session.viewing = None, None, None, [], None
        return (session, *render(session, notation), _message("Reset: a fresh run starts with the next Step."),
                gr.Timer(active=False), gr.Button(value="Play"))


def view_handler(session, notation, step):
    session = session if isinstance(session, Session) else Session()
    with session.lock:
        if session.traces and step is not None and 1 <= int(step) <= len(session.traces):
            session.viewing = int(step)
        return (session, *render(session, notation))


def time_step_handler(pair: ModelPair, prompt: str, config: DecodeConfig, steps: int = 8) -> tuple[float, float]:
    """Median seconds of the Step handler (with the plots' JSON serialisation that gradio then does)
    and of the engine work inside it (the speculative step and the baseline's catch-up), for the benchmark."""
    knobs = ("shakespeare", prompt, config.gamma, config.temperature, config.top_k or 0, config.top_p or 1.0,
             config.kl_budget, config.seed, config.max_new_tokens)  # the preset name is a label: `pair` is passed in
    session = Session()
    start_run(session, settings_from(*knobs), pair)  # the handler then continues this run
    handler_s, engine_s = [], []
    for _ in range(steps):
        if session.spec.finished:
            break
        t0 = time.perf_counter()
        out = step_handler(session, "leviathan", *knobs, pair=pair)
        for figure in (*out[3:6], out[8]):
            figure.to_json()  # gradio's postprocess serialises each plot; count it
        handler_s.append(time.perf_counter() - t0)
        engine_s.append(session.last_engine_s)
    return statistics.median(handler_s), statistics.median(engine_s)


# ------------------------------------------------------------------ layout

CHIP_CLICK_JS = """
() => {
  document.addEventListener('click', (event) => {
    const chip = event.target.closest('#timeline .chip');
    const input = document.querySelector('#view-step input');
    if (!chip || !input) return;
    input.value = chip.dataset.step;
    input.dispatchEvent(new Event('input', {bubbles: true}));
    input.dispatchEvent(new KeyboardEvent('keydown', {key: 'Enter', bubbles: true}));
  });
}
"""

INTRO = """# specviz — speculative decoding, step by step
A small **draft** model ({d}) guesses γ tokens; the large **target** model ({t}) checks all of them in **one**
forward pass. Each guess is kept with probability min(1, {t}/{d}); at the first rejection a replacement is drawn
from the *residual* norm(max(0, {t} − {d})); if all are kept, the target adds a *bonus* token. The output is
distributed **exactly** as the target alone would sample it (temperature 0 reduces this to "keep drafts while
the argmaxes agree"), yet each target pass can yield several tokens."""


def intro(notation: str) -> str:
    t, d = figures.letters(notation)
    return INTRO.format(t=t, d=d)


def build_app() -> gr.Blocks:
    preset0 = default_preset()
    with gr.Blocks(title="specviz: speculative decoding, step by step") as demo:
        session = gr.State(Session())
        header = gr.Markdown(intro("leviathan"), elem_id="intro")
        with gr.Row():
            with gr.Column(scale=1, min_width=300):
                prompt = gr.Textbox(label="Prompt", value=PRESETS[preset0].examples[0] if PRESETS[preset0].examples else "",
                                    lines=3, elem_id="prompt")
                example = gr.Dropdown(label="Example prompts", choices=list(PRESETS[preset0].examples), value=None,
                                      elem_id="examples")
                preset = gr.Dropdown(label="Model pair", choices=[(f"{k}: {v.description}", k) for k, v in PRESETS.items()],
                                     value=preset0, elem_id="preset")
                with gr.Row():
                    step_btn = gr.Button("Step", variant="primary", elem_id="step")
                    play_btn = gr.Button("Play", elem_id="play")
                    reset_btn = gr.Button("Reset", variant="stop", elem_id="reset")
                speed = gr.Slider(0.2, 3.0, value=0.8, step=0.1, label="Play: seconds per step", elem_id="speed")
                gamma = gr.Slider(1, 16, value=4, step=1, label="γ: tokens drafted per step", elem_id="gamma")
                temperature = gr.Slider(0, 2, value=1.0, step=0.05, label="temperature (0 = greedy)", elem_id="temperature")
                top_k = gr.Number(value=0, precision=0, minimum=0, label="top-k (0 = off)", elem_id="top-k")
                top_p = gr.Slider(0.05, 1.0, value=1.0, step=0.05, label="top-p (1 = off)", elem_id="top-p")
                kl_budget = gr.Slider(0, 2, value=0.0, step=0.01, elem_id="kl-budget",
                                      label="KL budget (0 = exact; > 0 = mentored decoding, LOSSY)")
                seed = gr.Number(value=0, precision=0, minimum=0, label="seed", elem_id="seed")
                max_new = gr.Slider(1, 200, value=80, step=1, label="max new tokens", elem_id="max-new-tokens")
                notation = gr.Radio([(v[2], k) for k, v in figures.NOTATIONS.items()], value="leviathan",
                                    label="Notation", elem_id="notation")
            with gr.Column(scale=2):
                message = gr.HTML(elem_id="message")
                timeline = gr.HTML(figures.timeline_html(prompt.value, []), label="Generated text", elem_id="timeline")
                view_step = gr.Number(label="Showing step (click a chip to pick one)", precision=0, elem_id="view-step")
                counters = gr.HTML(elem_id="counters")
                narration = gr.Markdown("*Nothing yet: press **Step**.*", elem_id="narration")
                pq_plot = gr.Plot(label="target vs draft", show_label=False, elem_id="pq-plot")
                uniform_plot = gr.Plot(label="uniform draw", show_label=False, elem_id="uniform-plot")
                residual_plot = gr.Plot(label="residual or bonus", show_label=False, elem_id="residual-plot")
                history_plot = gr.Plot(label="the run so far", show_label=False, elem_id="history-plot")
        timer = gr.Timer(0.8, active=False)

        knobs = [preset, prompt, gamma, temperature, top_k, top_p, kl_budget, seed, max_new]
        views = [timeline, counters, pq_plot, uniform_plot, residual_plot, narration, view_step, history_plot]
        per_tab = dict(concurrency_limit=None)  # the Session lock serialises a tab; tabs run side by side
        step_btn.click(step_handler, [session, notation, *knobs], [session, *views, message], api_name="step", **per_tab)
        tick = timer.tick(tick_handler, [session, notation, *knobs], [session, *views, message, timer, play_btn], **per_tab)
        play_btn.click(play_handler, [session, speed], [session, timer, play_btn], **per_tab)
        reset_btn.click(stop_handler, [session], [session, timer, play_btn], cancels=[tick], api_name=False, **per_tab).then(
            reset_handler, [session, notation], [session, *views, message, timer, play_btn], api_name="reset", **per_tab)
        notation.change(view_handler, [session, notation, view_step], [session, *views], **per_tab)
        notation.change(intro, notation, header)
        view_step.input(view_handler, [session, notation, view_step], [session, *views], **per_tab)
        view_step.submit(view_handler, [session, notation, view_step], [session, *views], **per_tab)
        example.change(lambda e, p: e or p, [example, prompt], prompt)
        preset.change(lambda p: gr.Dropdown(choices=list(PRESETS[p].examples), value=None), preset, example)
    return demo


def launch(demo: gr.Blocks | None = None, **kwargs):
    os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
    try:  # load the default pair before the first visitor arrives; a failure shows on the first Step
        load_pair(default_preset())
    except ModelLoadError as err:
        print(f"warning: {err}")
    demo = demo or build_app()
    demo.queue(default_concurrency_limit=None)
    return demo.launch(js=CHIP_CLICK_JS, **kwargs)
