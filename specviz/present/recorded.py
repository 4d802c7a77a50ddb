"""A recorded run shown as the page shows a live one: the card, the bars, u, the verdicts, the residual, the
counters and the race lanes, each marked "recorded on <device>, <date>"; no model is loaded, every figure is the
file's.

A `Playback` is one run of a recording (`core.tracefile`) and the step it shows; a lesson (assets/lessons) adds
one sentence per step of what to notice, in the page's language (catalogue keys lesson.<name>.<step>).
"""
from __future__ import annotations

import functools
import html
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import plotly.graph_objects as go

from ..core.metrics import metric_set
from ..core.race_record import Race
from ..core.recipe import Producer
from ..core.tracefile import RecordedRun, Recording, TraceFileError, read_recording
from . import export, render, run_figures, step_figures
from .i18n import CATALOGUE, tr
from .myths import BY_ID
from .parts import NOTHING_HIDDEN
from .plotting import empty_figure
from .predict import Predict, conceal
from .race import race_html
from .render import Status
from .views import View, build_view, rejection_table

LESSONS_DIR = "lessons"     # under assets/: <name>.jsonl, recorded by `python -m specviz record-lessons`
LESSONS = ("typical", "greedy", "copying")   # the order the page offers them; the first opens with the page


@dataclass
class Playback:
    """One recorded run and the step shown (1-based): Step moves it on, #view-step anywhere in the run."""
    run: RecordedRun
    producer: Producer | None
    settings: dict
    at: int = 1
    lesson: str = ""            # a lesson's name: its sentences are shown step by step
    baseline_call_s: tuple = ()  # the target-only side's forward times, where the recording kept them
    race: Race | None = None     # the race recorded with it, where the file has one
    questions: tuple = ()        # (step, misconception ids) a lesson asks before that round (predict mode)

    @property
    def total(self) -> int:
        return len(self.run.traces)

    def asks(self, step: int) -> tuple[str, ...]:
        """The misconceptions (present/myths.py ids) the recording asks before step `step`'s round."""
        return next((ids for at, ids in self.questions if at == step), ())

    @classmethod
    def of(cls, recording: Recording, index: int = 0) -> Playback:
        """Run `index` of a recording (a report's traces.jsonl holds one a prompt and seed)."""
        if not 0 <= index < len(recording.runs):
            raise TraceFileError(f"the recording has {len(recording.runs)} run(s); run {index + 1} is not one")
        run = recording.runs[index]
        lesson = recording.extra.get("lesson", "")
        calls = recording.extra.get("baseline_call_s", [])
        ok = isinstance(calls, list) and all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in calls)
        return cls(run=run, producer=recording.producer, settings=recording.settings,
                   lesson=lesson if isinstance(lesson, str) and lesson in LESSONS else "",
                   baseline_call_s=tuple(calls) if ok and index == 0 else (), race=recording.race,
                   questions=lesson_questions(recording.extra.get("questions")))


def lesson_questions(data) -> tuple:
    """A recording's questions field ({"<step>": ["<myth id>", ...]}) as ((step, ids), ...): only whole steps and
    known ids are kept (a file may come from anyone), at most a few per step."""
    if not isinstance(data, dict):
        return ()
    kept = []
    for step, ids in data.items():
        if isinstance(step, str) and step.isdigit() and isinstance(ids, list):
            known = tuple(dict.fromkeys(i for i in ids if isinstance(i, str) and i in BY_ID))[:len(BY_ID)]
            if known:
                kept.append((int(step), known))
    return tuple(kept)


def recorded_label(producer: Producer | None, lang: str = "en") -> str:
    """"recorded on cpu · float32, 2026-11-26", or that the file did not say where and when."""
    if producer is None:
        return tr(lang, "recorded.unknown")
    return tr(lang, "recorded.on", device=f"{producer.device} · {producer.dtype}", date=producer.date)


def badge(producer: Producer | None, lang: str = "en") -> str:
    return f'<span class="badge recorded">{html.escape(recorded_label(producer, lang))}</span>'


def lesson_note(playback: Playback, lang: str = "en") -> str:
    """The lesson's sentence for the step shown ("" outside a lesson, or past its written steps)."""
    key = f"lesson.{playback.lesson}.{playback.at}"
    if not playback.lesson or key not in CATALOGUE["en"]:
        return ""
    return (f'<div class="lesson-note" data-step="{playback.at}"><b>{tr(lang, f"lesson.{playback.lesson}.title")}'
            f'</b> · {tr(lang, key)}</div>')


def _marked(figure: go.Figure, label: str) -> go.Figure:
    """A figure with the recording's mark in its top-right corner (its own title stays)."""
    figure.add_annotation(text=html.escape(label), xref="paper", yref="paper", x=1, y=1.0, xanchor="right",
                          yanchor="bottom", showarrow=False, font=dict(size=11), opacity=0.8)
    return figure


def recorded_view(playback: Playback, notation: str, status: Status = Status(), lang: str = "en",
                  opening: bool = False, predict: Predict | None = None) -> View:
    """The View of the recorded step `playback.at`: the run as it stood after that step (`opening`: the lesson a
    fresh page shows, which the visitor's first Step replaces with a live run; `predict`: the tab's predict mode,
    which asks the round shown before it shows it)."""
    traces = playback.run.traces[: playback.at]
    trace = traces[-1]
    hidden = predict.shown(playback.run, trace, asks=playback.asks(playback.at)) if predict else NOTHING_HIDDEN
    records = [t.record for t in traces if t.record is not None]
    tokens = trace.counters.tokens
    calls = playback.baseline_call_s[:tokens]
    metrics = metric_set(records, calls)
    label, mark = recorded_label(playback.producer, lang), badge(playback.producer, lang)
    device = playback.producer.device if playback.producer else "?"
    lossy = trace.kl_budget > 0
    head = tr(lang, "recorded.opening" if opening else "recorded.step", n=playback.at, total=playback.total)
    summary = (f'<div class="recorded-head">{mark} {head}</div>'
               + conceal(lesson_note(playback, lang) + render.round_summary(trace, notation, lang), hidden))
    passes = trace.counters.draft_calls  # a drafter with no model (prompt lookup) makes none
    counters = (f'{mark}{render.counters_html(metrics, device, lossy, len(calls), len(traces), lang, draft_passes=passes)}'
                if calls else f'{mark}<div class="counters">{render.analytics_html(metrics, lang)}</div>')
    return View(render.text_view(playback.run.prompt, traces, trace.step, lang, trace.step if "end" in hidden else None),
                f'<div class="recorded-card">{mark}{render.step_card(trace, notation, playback.at, lang, hidden)}</div>',
                conceal(counters, hidden), render.narration(trace, notation, lang),
                _marked(step_figures.pq_figure(trace, notation, lang), label),
                _marked(step_figures.uniform_figure(trace, notation, lang), label),
                _marked(step_figures.residual_figure(trace, notation, lang), label),
                _marked(run_figures.history_figure(traces, notation, lang), label), trace.step,
                render.message_html(status), render.analytics_html(metrics, lang),
                run_figures.analytics_figure(traces, metrics, notation, lang) if records else empty_figure(""),
                rejection_table(export.rejections(traces), notation, lang),
                render.most_rejected_html(export.most_rejected(traces), lang), summary)


def lesson_path(name: str) -> Path:
    """assets/lessons/<name>.jsonl beside the package's assets (a source checkout or the Space)."""
    return Path(str(resources.files("specviz"))).parent / "assets" / LESSONS_DIR / f"{name}.jsonl"


def open_lesson(name: str) -> Playback | None:
    """The lesson `name` at its first step, or None where it was not recorded (a message says so elsewhere)."""
    path = lesson_path(name)
    if name not in LESSONS or not path.is_file():
        return None
    return Playback.of(read_recording(path.read_bytes(), name=f"lesson {name}"))


@functools.cache
def first_lesson() -> Recording | None:
    """The lesson a page opens with, read once (plain data, never changed: each view copies what it moves)."""
    path = lesson_path(LESSONS[0])
    return read_recording(path.read_bytes(), name=f"lesson {LESSONS[0]}") if path.is_file() else None


def opening(lang: str = "en", notation: str = "leviathan", predict: Predict | None = None) -> View | None:
    """What a fresh page shows before any model call: the first lesson's first step, marked recorded (asked first
    in predict mode: a visitor's first click can be an answer)."""
    lesson = first_lesson()
    return recorded_view(Playback.of(lesson), notation, Status(), lang, opening=True, predict=predict) if lesson else None


def view_of(session, notation: str, status: Status = Status(), lang: str = "en") -> View:
    """A tab's view: its recorded run where one is open; the opening lesson until its own first Step; else its run."""
    playback = getattr(session, "recorded", None)
    if playback is not None:
        return recorded_view(playback, notation, status, lang, predict=session.predict)
    if session.run is None and not getattr(session, "stepped", False):
        shown = opening(lang, notation, session.predict)
        if shown is not None:
            return shown._replace(message=render.message_html(status))
    return build_view(session, notation, status, lang)


def race_view(session, lang: str = "en") -> str | None:
    """The race a tab shows, in `lang`: its recording's race (the opening lesson's until its first Step), marked
    recorded; else its own last race; else the line saying what Race does. None: keep what is shown."""
    playback = getattr(session, "recorded", None)
    if playback is None and not session.races and session.run is None and not getattr(session, "stepped", False):
        lesson = first_lesson()
        playback = Playback.of(lesson) if lesson else None
    if playback is None:
        if not session.races:
            return race_html(None, lang)
        own = getattr(session, "race", None)
        return None if own is None else race_html(own, lang)
    return race_html(playback.race, lang, mark=badge(playback.producer, lang) + " ") if playback.race else race_html(None, lang)


def advance(playback: Playback, lang: str = "en") -> Status:
    """Step on a recording: its next step, or a note that the recording ends here (nothing is computed)."""
    if playback.at >= playback.total:
        return Status("info", tr(lang, "recorded.end", total=playback.total))
    playback.at += 1
    return Status()


def view_step(playback: Playback, step, lang: str = "en") -> Status:
    """#view-step on a recording: any whole step of it, else a message naming the range."""
    whole = isinstance(step, (int, float)) and not isinstance(step, bool) and float(step).is_integer()
    if not whole or not 1 <= step <= playback.total:
        return Status("error", tr(lang, "err.view_step", hi=playback.total, value=repr(step)))
    playback.at = int(step)
    return Status()
