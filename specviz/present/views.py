"""What one event of the app shows, built from a tab's run: plain HTML strings and plotly figures.

No gradio here: the app wires these to components, the benchmark times them, tests read them by name.
"""
from __future__ import annotations

import functools
import math
import shutil
import tempfile
import threading
from pathlib import Path
from typing import NamedTuple

import plotly.graph_objects as go

from ..core import playground
from ..core.config import DRAFTS_MAX, DRAFTS_MIN
from ..core.metrics import MIN_TIMED
from ..core.notation import letters, p_value_text
from ..engine.serving.clock import TIMED
from ..engine.serving.costs import APP_VERIFY_N
from ..engine.serving.run import ComparedRun, RunSettings
from . import export, playground_figures, render, run_figures, step_figures
from .errors import localize
from .export_folders import EXPORT_FILES, export_prefix
from .i18n import tr
from .page_settings import text_value
from .plotting import empty_figure
from .predict import Predict, conceal
from .render import Status
from .share import producer_of, settings_of

KEPT_RUNS = 20  # runs ("requests") a tab keeps for the per-request histogram, the current one included


class Session:
    """One browser tab's run (a plain class: gradio copies the initial value per tab, see __deepcopy__)."""

    def __init__(self):
        self.run: ComparedRun | None = None
        self.viewing: int | None = None      # step shown (None: the latest)
        self.playing = False
        self.lang = "en"                    # the tab's language at its last Pause/Reset (for /reset)
        self.drawn_lang = "en"              # the language its last Step or tick was drawn in (#lang may move meanwhile)
        self.lock = threading.Lock()
        self.owner: str | None = None        # the client's session id, once an event named it
        self.notice = ""                     # said with the next Step (e.g. that an earlier run expired)
        self.export_dir: str | None = None   # this session's one export folder (JSON + CSV), replaced by the next
        self.races = 0                       # races run: which side goes first alternates
        self.kept_runs: list[list] = []      # earlier runs' StepRecords (requests), oldest first
        self.recorded = None                 # an open recording (present/recorded.py Playback): Step moves through it
        self.stepped = False                 # the tab ran a Step of its own: the opening lesson gives way
        self.race = None                     # the tab's last race (core.race_record.Race): exported with the run
        self.race_settings: dict = {}        # the settings it ran with, by name
        self.race_lang = "en"               # the language it was drawn in (#lang may move while it runs)
        self.predict = Predict()             # predict mode: on or off, the score of this run, the round asked
        self.link_read = False               # an event read the link the page was opened with (opened or refused)
        self.panel_sent = ""                 # the predict panel's HTML last sent to the tab (app/predict_ui.py)

    def __deepcopy__(self, memo):  # gr.State deep-copies its initial value for each tab: a fresh session
        return Session()

    @property
    def traces(self) -> list:
        return self.run.traces if self.run else []

    def release(self) -> None:
        """Free the run and its export now: the tab closed or the session expired."""
        self.run, self.viewing, self.playing, self.recorded = None, None, False, None
        self.kept_runs, self.race, self.race_settings = [], None, {}
        self.predict.clear()
        drop_export(self)

    def keep_run(self) -> None:
        """Keep the current run's StepRecords (a request of the per-request histogram) before it is replaced;
        the oldest go beyond KEPT_RUNS - 1, leaving room for the next run."""
        if self.run is not None and self.traces:
            self.kept_runs = [*self.kept_runs, self.run.timings()[0]][-(KEPT_RUNS - 1):]


def with_lock(fn):
    """Run fn(session, ...) holding the session's lock (a fresh Session if none was given)."""
    @functools.wraps(fn)
    def wrapper(session, *args, **kwargs):
        session = session if isinstance(session, Session) else Session()
        with session.lock:
            return fn(session, *args, **kwargs)
    return wrapper


class View(NamedTuple):
    """Everything one event shows, by name."""
    timeline: str
    step_card: str
    counters: str
    narration: str
    pq: go.Figure
    uniform: go.Figure
    residual: go.Figure
    history: go.Figure
    view_step: int | None
    message: str
    analytics: str
    analytics_plot: go.Figure
    rejections: list
    most_rejected: str
    round_summary: str        # appended last: /step's earlier outputs keep their order


def build_view(session: Session, notation: str, status: Status = Status(), lang: str = "en") -> View:
    """The view of the step the session is looking at (the latest unless a token was clicked), in `lang`."""
    run = session.run
    prompt = run.settings.prompt if run else ""
    traces = session.traces
    if not traces:
        blank = empty_figure(tr(lang, "fig.empty"))
        return View(render.text_view(prompt, [], lang=lang), render.step_card(None, lang=lang),
                    render.counters_html({}, "", False, 0, 0, lang), render.narration(None, lang=lang), blank, blank,
                    blank, blank, None, render.message_html(status), render.analytics_html({}, lang), blank,
                    rejection_table([], notation, lang), render.most_rejected_html([], lang),
                    render.round_summary(None, lang=lang))
    trace = traces[-1] if session.viewing is None else traces[session.viewing - 1]
    metrics = run.metrics()
    hidden = session.predict.shown(run, trace, latest=trace is traces[-1])  # predict mode: parts still asked
    return View(render.text_view(prompt, traces, trace.step, lang, hidden_step=trace.step if "end" in hidden else None),
                render.step_card(trace, notation, len(traces), lang, hidden),
                conceal(render.counters_html(metrics, run.device, run.config.lossy, run.baseline_tokens(), len(traces),
                                             lang, draft_passes=traces[-1].counters.draft_calls,
                                             verify_costs=run.verify_costs(), lookup=run.config.drafter == "lookup"),
                        hidden),
                render.narration(trace, notation, lang), step_figures.pq_figure(trace, notation, lang),
                step_figures.uniform_figure(trace, notation, lang), step_figures.residual_figure(trace, notation, lang),
                run_figures.history_figure(traces, notation, lang), trace.step, render.message_html(status),
                render.analytics_html(metrics, lang), run_figures.analytics_figure(traces, metrics, notation, lang),
                rejection_table(export.rejections(traces), notation, lang),
                render.most_rejected_html(export.most_rejected(traces), lang),
                conceal(render.round_summary(trace, notation, lang), hidden))


def step_session(session: Session, settings: RunSettings, lang: str = "en") -> Status:
    """One step of the session's run (a new run if the settings changed)."""
    note, session.notice = session.notice, ""
    if session.run is None or session.run.settings != settings:
        note += tr(lang, "msg.settings_changed") if session.traces else ""
        session.keep_run()
        session.run, session.viewing = ComparedRun(settings), None
        if session.run.capture_s:  # paid once, before the first timed step: said, not hidden in a timing
            note += tr(lang, "msg.graphs_captured", s=f"{session.run.capture_s:.2f}")
    session.run.step()
    session.viewing = None
    rebuilt = session.run.take_rebuilt_s()
    if rebuilt:  # a wait the visitor notices: say why
        note += tr(lang, "msg.caches_rebuilt", s=f"{rebuilt:.2f}")
    if len(session.run.traces) >= MIN_TIMED:  # the timings count from here: the verify's cost curve joins them
        measured = session.run.measure_verify_costs()
        note += tr(lang, "msg.verify_measured", n=APP_VERIFY_N, s=f"{measured:.2f}") if measured else ""
    done = tr(lang, "msg.finished") if session.run.finished else ""
    return Status("info", note + done) if note or done else Status()


# ------------------------------------------------------------------ the playground tab


def playground_tokens(text: str, size: int) -> list[str]:
    """The token names typed by the user, padded with t1, t2, ... or cut to the distributions' size."""
    names = [x.strip() for x in text_value("tokens", text).split(",") if x.strip()]
    return (names + [f"t{i + 1}" for i in range(len(names), size)])[:size]


def playground_view(tokens: str, target: str, draft: str, kl_budget: float, notation: str, lang: str = "en"):
    """(decomposition figure, mentored figure, status) for the typed distributions, in `lang`."""
    try:
        p, _ = playground.check_pair(target, draft)
        names = playground_tokens(tokens, len(p))
        return (playground_figures.decomposition_figure(playground.decomposition(target, draft), names, notation, lang),
                playground_figures.mentored_figure(playground.mentored(target, draft, _kl_budget(kl_budget)), names,
                                                   notation, lang), Status())
    except (ValueError, TypeError) as err:
        return None, None, Status("error", localize(lang, str(err)))


def _kl_budget(value) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
        raise ValueError(f"kl_budget must be a finite number >= 0, not {value!r}")
    return float(value)


def _verdict(lang: str, p_value: float) -> str:
    return tr(lang, "pg.consistent") if p_value > 1e-3 else tr(lang, "pg.biased")


def playground_run(tokens: str, target: str, draft: str, samples: int, seed: int, notation: str, lang: str = "en"):
    """(histogram of every rule, summary Markdown, status), in `lang` and the notation's letters."""
    try:
        t, _ = letters(notation)
        p, _ = playground.check_pair(target, draft)
        names = playground_tokens(tokens, len(p))
        results = [playground.simulate(target, draft, samples, v, seed) for v in playground.VARIANTS]
    except (ValueError, TypeError) as err:
        return None, "", Status("error", localize(lang, str(err)))
    rows = "\n".join(f"| {tr(lang, playground_figures.VARIANT_STYLE[r['variant']][0])} | {p_value_text(r['p_value'])} | "
                     f"{r['max_gap']:.4f} | {_verdict(lang, r['p_value'])} |" for r in results)
    head = [tr(lang, "pg.col_rule"), tr(lang, "pg.col_p"), tr(lang, "pg.col_gap", t=t), tr(lang, "pg.col_verdict")]
    rate = tr(lang, "pg.rate", m=f"{results[0]['acceptance_rate']:.4f}", e=f"{results[0]['expected_acceptance_rate']:.4f}")
    summary = f"{rate}\n\n| {' | '.join(head)} |\n|---|---|---|---|\n{rows}"
    return playground_figures.histogram_figure(results, names, notation, lang=lang), summary, Status()


def playground_drafts_run(tokens: str, target: str, draft: str, drafts: int, samples: int, seed: int, notation: str,
                          lang: str = "en"):
    """Several drafts: (histogram of the exact rule and the merged shortcut, acceptance-vs-k figure, summary, status),
    in `lang`."""
    from ..core import playground_drafts
    from . import drafts_figures

    try:
        letters(notation)  # refused here, by name, rather than by the figures
        p, _ = playground.check_pair(target, draft)
        names = playground_tokens(tokens, len(p))
        k = playground.whole_number("drafts", drafts, DRAFTS_MIN, DRAFTS_MAX)
        results = [playground_drafts.simulate_drafts(target, draft, k, samples, v, seed)
                   for v in playground_drafts.DRAFT_VARIANTS]
        curve = playground_drafts.acceptance_curve(target, draft)
    except (ValueError, TypeError) as err:
        return None, None, "", Status("error", localize(lang, str(err)))
    exact, merged = results
    rate = tr(lang, "pg.drafts_rate", k=k, a=f"{exact['acceptance_rate']:.4f}", e=f"{exact['expected_acceptance_rate']:.4f}",
              o=f"{curve['one_minus_tv']:.4f}")
    head = [tr(lang, "pg.col_rule"), tr(lang, "pg.col_p"), tr(lang, "pg.col_verdict")]
    summary = (f"{rate}\n\n| {' | '.join(head)} |\n|---|---|---|\n"
               f"| {tr(lang, 'pg.drafts_exact')} | {exact['p_value']:.3g} | {_verdict(lang, exact['p_value'])} |\n"
               f"| {tr(lang, 'pg.drafts_merged')} | {merged['p_value']:.3g} | {_verdict(lang, merged['p_value'])} |")
    return (drafts_figures.drafts_histogram(results, names, notation, lang),
            drafts_figures.acceptance_figure(curve, k, exact["acceptance_rate"], notation, lang), summary, Status())


# ------------------------------------------------------------------ debugging a pair

REJECTION_COLUMNS = ["step", "position", "context", "drafted", "p (target)", "q (draft)", "u", "accept chance", "resampled"]
_REJECTION_KEYS = ["rej.step", "rej.position", "rej.context", "rej.drafted", "rej.target", "rej.draft", None, "rej.chance",
                   "rej.resampled"]


def rejection_columns(notation: str = "leviathan", lang: str = "en") -> list[str]:
    """The rejection table's headers in `lang`, the target and draft columns in the notation's letters
    (REJECTION_COLUMNS is the English, Leviathan-letter set the page starts with)."""
    t, d = letters(notation)
    return [tr(lang, key, t=t, d=d) if key else "u" for key in _REJECTION_KEYS]


def rejection_table(rows: list, notation: str = "leviathan", lang: str = "en") -> dict:
    """The rejection rows with their headers, as gr.Dataframe takes them."""
    return {"headers": rejection_columns(notation, lang), "data": rows}


@with_lock
def sweep_view(session: Session, notation: str, lang: str = "en"):
    """(temperature-sweep figure, status) on the session's current context."""
    from ..engine.decoding.sweep import temperature_sweep

    if session.run is None or session.run.stateless:
        return None, Status("error", tr(lang, "msg.sweep_first" if session.run is None else "msg.sweep_zerogpu"))
    try:
        sweep = temperature_sweep(session.run.settings.load(), session.run.tokens)
        return run_figures.sweep_figure(sweep, notation, lang), Status()
    except (ValueError, RuntimeError) as err:
        return None, Status("error", tr(lang, "msg.sweep_failed", detail=str(err).splitlines()[0]))


KL_GRID = (0.001, 0.003, 0.01, 0.03, 0.1, 0.3, 1.0)   # the budgets the KL scale's note compares


@with_lock
def kl_buys(session: Session, kl_budget: float, lang: str = "en") -> str:
    """The acceptance a KL budget buys on the session's current context: the expected acceptance rate
    Σ draft·accept of exact decoding (Σ min(p, q)) and of mentored decoding at this budget, at the next
    position, from one forward of each model (HTML; a hint before the first Step; at budget 0 the exact label alone,
    with no forward: the page refreshes the note after every Step). Its forwards hold the fair clock as a round
    does, so they never run inside another visitor's timed round."""
    from ..engine.decoding.sweep import next_acceptance

    if session.run is None or session.run.stateless or not session.run.tokens:
        return f'<span class="muted">{tr(lang, "kl.none")}</span>'
    try:
        budget = float(kl_budget or 0.0)
        if budget <= 0:
            return f'<span>{tr(lang, "kl.exact")}</span>'
        with TIMED:
            exact, mentored = next_acceptance(session.run.settings.load(), session.run.tokens, session.run.config,
                                              budget)
    except (ValueError, RuntimeError, TypeError) as err:
        return render.message_html(Status("error", localize(lang, str(err).splitlines()[0])))
    return f'<span>{tr(lang, "kl.buys", exact=f"{exact:.3f}", kl=f"{budget:g}", mentored=f"<b>{mentored:.3f}</b>")}</span>'


def drop_export(session: Session) -> None:
    """Delete the session's export folder, if any."""
    folder, session.export_dir = session.export_dir, None
    if folder:
        shutil.rmtree(folder, ignore_errors=True)


@with_lock
def export_files(session: Session, root: str | None = None):
    """(trace file path, CSV file path, the traces as JSON data) of the session's run, written to a
    fresh folder under `root` (the server's file cache); the session's previous export is deleted,
    so a session holds one export at a time, and none once it is released. The trace file (core.tracefile)
    names its producer and holds the tab's last race: the page, `replay` and `report --from-traces` open it."""
    traces = session.traces
    if not traces:
        return None, None, []
    drop_export(session)
    if root:
        Path(root).mkdir(parents=True, exist_ok=True)
    folder = session.export_dir = tempfile.mkdtemp(prefix=export_prefix(), dir=root)  # named after this server
    json_path, csv_path = f"{folder}/{EXPORT_FILES[0]}", f"{folder}/{EXPORT_FILES[1]}"
    run = session.run
    text = export.trace_file(traces, producer_of(run), settings_of(run.settings, "leviathan"), run.settings.prompt,
                             run.timings()[1], session.race, session.race_settings)
    with open(json_path, "w", encoding="utf-8") as f:
        f.write(text)
    with open(csv_path, "w", encoding="utf-8", newline="") as f:
        f.write(export.tokens_csv(traces))
    return json_path, csv_path, [t.to_dict() for t in traces]
