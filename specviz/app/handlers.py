"""What each event does to a tab's Session: step, Play ticks, Pause, Reset, view a step.

Gradio-free functions of (session, PageSettings) -> (session, view), each under the session's lock, reading
the settings by name, so the tests drive them without a server and wiring.py only connects them to components.
"""
from __future__ import annotations

import threading
from collections import OrderedDict

from ..core.notation import letters, notation_key
from ..engine.decoding.decoders import DecodingFinished
from ..engine.limits import event_deadline
from ..engine.models.policy import scrub_paths
from ..engine.models.presets import ModelLoadError
from ..engine.serving.race import run_race
from ..engine.settings import current as current_deployment
from ..present.errors import localize
from ..present.i18n import CATALOGUE, tr
from ..present.page_settings import PageSettings, settings_from
from ..present.race import race_html, race_status
from ..present.recorded import advance, first_lesson, view_of, view_step
from ..present.render import Status
from ..present.share import settings_of
from ..present.views import Session, View, step_session, with_lock

SESSION_TTL_S = 15 * 60      # an idle tab's run is freed after this long (gr.State time_to_live)
QUEUE_STATUS_S = 1.0         # queued visitors' positions refresh each second, not after every event
DEFAULT_NOTATION = "leviathan"


class FreedRuns:
    """Which clients' runs were freed (idle too long, or pushed out for room), so that their next Step
    says so instead of silently starting afresh. Bounded: the newest `capacity` ids (~100 bytes each)."""

    def __init__(self, capacity: int = 10_000):
        self.capacity = capacity
        self._why: OrderedDict[str, str] = OrderedDict()
        self._lock = threading.Lock()

    def record(self, owner: str, why: str) -> None:
        with self._lock:
            self._why[owner] = why
            self._why.move_to_end(owner)
            while len(self._why) > self.capacity:
                self._why.popitem(last=False)

    def pop(self, owner: str) -> str:
        with self._lock:
            return self._why.pop(owner, "")


FREED = FreedRuns()
EXPIRED = f"Your earlier run had no event for {SESSION_TTL_S // 60} minutes and was freed"


class ReleaseSession:
    """gr.State's delete_callback: note that the client's run was freed, then free it. An object with a
    plain repr, so the page's /config shows no memory address."""

    def __call__(self, session) -> None:
        """Never waits: a session whose lock is held is in an event right now, and gradio stores it
        back (with a fresh time to live) when that event ends, so it is left as it is."""
        if isinstance(session, Session) and session.lock.acquire(blocking=False):
            try:
                if session.owner and session.traces:
                    FREED.record(session.owner, getattr(session, "freed_because", "") or EXPIRED)
                session.release()
            finally:
                session.lock.release()

    def __repr__(self) -> str:
        return "release_session"


release_session = ReleaseSession()


def adopt(session, owner: str | None, lang: str = "en"):
    """The session of client `owner` for this event; a fresh one whose earlier run was freed says so (in `lang`)."""
    session = session if isinstance(session, Session) else Session()
    if owner and session.owner is None:
        session.owner = owner
        why = FREED.pop(owner)
        if why and session.run is None:
            session.notice = tr(lang, "err.new_run", why=localize(lang, why))
    return session


def session_worth(values) -> int:
    """How much a client loses if its session goes (gradio_internals evicts the least worth first):
    0 no run, 1 a run of one Step, 2 a run of two Steps or more."""
    return max((min(len(v.traces), 2) for v in values if isinstance(v, Session)), default=0)


def _notation(notation, lang: str = "en") -> tuple[str, Status]:
    """(a notation to draw with, an error naming the setting if `notation` is not one)."""
    try:
        return notation_key(notation), Status()
    except (ValueError, TypeError) as err:
        return DEFAULT_NOTATION, Status("error", localize(lang, f"notation: {err}"))


def check_lang(lang) -> Status:
    """An error naming `lang` unless it is one of the page's languages (in English: there is no other to say it in)."""
    if isinstance(lang, str) and lang in CATALOGUE:
        return Status()
    return Status("error", f"lang must be one of {', '.join(CATALOGUE)}, not {shown_value(lang)}")


def shown_value(value, limit: int = 80) -> str:
    """A refused value as the message shows it: its repr, cut to `limit` characters."""
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + "…"


def _continues_the_lesson(session: Session, run_settings, notation: str) -> bool:
    """Predict mode's first own Step on the settings the opening lesson was recorded with: the class has just
    answered the lesson's first round, which the live models would draw again (the same seed), so the live run
    starts with that round and the Step asks its second."""
    if session.run is not None or session.recorded is not None or not session.predict.on:
        return False
    lesson = first_lesson()
    return lesson is not None and settings_of(run_settings, notation) == {**lesson.settings, "notation": notation}


def _step(session: Session, settings: PageSettings) -> tuple[View, Status]:
    lang = settings.lang
    if session.predict.open and not check_lang(lang).error:  # predict mode: Step moves through the round asked
        notation, status = _notation(settings.notation, lang)
        if not status.error:
            session.predict.advance()
            return view_of(session, notation, status, lang), status
    opening = not session.stepped  # before this Step counts as the visitor's own
    if session.recorded is None:  # the visitor's own Step, even a refused one: the opening lesson gives way
        session.stepped = True
    status = check_lang(lang)
    if status.error:  # nothing else is read in a language the page does not have
        return view_of(session, DEFAULT_NOTATION, status, "en"), status
    notation, status = _notation(settings.notation, lang)
    if status.error:  # nothing steps on a bad value
        return view_of(session, notation, status, lang), status
    if session.recorded is not None:  # an open recording: Step moves through it, no model runs
        status = advance(session.recorded, lang)
        return view_of(session, notation, status, lang), status
    try:
        with event_deadline(current_deployment().event_timeout_s):
            run_settings = settings_from(settings)
            again = opening and _continues_the_lesson(session, run_settings, notation)
            status = step_session(session, run_settings, lang)
            if again:  # the lesson's round drawn live; this Step shows the next, and the class's score goes on
                first, status = status, step_session(session, run_settings, lang)
                session.predict.carry(session.run)
                said = tr(lang, "msg.lesson_drawn", seed=run_settings.config.seed)
                status = Status("info", first.text + said + status.text)
    except (ValueError, ModelLoadError, RuntimeError) as err:
        status = _failure(err, lang)
    return view_of(session, notation, status, lang), status


def _failure(err: Exception, lang: str) -> Status:
    """What a model-bound event that failed says: the setting and its range, or what the models raised."""
    if isinstance(err, DecodingFinished):
        return Status("error", tr(lang, "msg.done_reset"))
    if isinstance(err, (ValueError, ModelLoadError)):  # the detail names the setting and its range (frame in `lang`)
        return Status("error", tr(lang, "msg.cannot_step", detail=localize(lang, scrub_paths(str(err)))))
    return Status("error", tr(lang, "msg.models_failed", detail=scrub_paths(str(err).splitlines()[0])))  # e.g. CUDA OOM


@with_lock
def race_handler(session, settings: PageSettings):
    """Race: the page's settings decoded to the end by both sides in alternating slices, the first side alternating
    per tab; returns (session, the race's HTML or None to keep what is shown, status)."""
    lang = settings.lang
    status = check_lang(lang)
    if status.error:  # as /step: nothing runs in a language the page does not have
        return session, None, status
    try:
        with event_deadline(current_deployment().event_timeout_s):
            run_settings = settings_from(settings)
            race = run_race(run_settings, speculative_first=session.races % 2 == 0)
    except (ValueError, ModelLoadError, RuntimeError) as err:
        return session, None, _failure(err, lang)
    session.races += 1
    session.race, session.race_settings = race, settings_of(run_settings, settings.notation)  # exported with the run
    return session, race_html(race, lang), race_status(race, lang)  # a race the deadline stopped shows its lanes


@with_lock
def step_handler(session, settings: PageSettings):
    """Step: one round of the session's run."""
    view, _ = _step(session, settings)
    return session, view


@with_lock
def tick_handler(session, settings: PageSettings):
    """A Play tick: a step, unless Pause or Reset came first; stops on the end or an error."""
    if not session.playing:
        return session, None, False
    asking = session.predict.open  # predict mode: this tick moves through the round asked, never an end
    view, status = _step(session, settings)
    recorded = session.recorded
    ended = not asking and (recorded.at >= recorded.total if recorded is not None else
                            session.run is None or session.run.finished)
    if status.error or ended:
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
def reset_handler(session, notation, lang: str = "en"):
    session.keep_run()  # the run so far stays one request of the per-request histogram
    session.playing, session.run, session.viewing, session.recorded = False, None, None, None
    session.predict.clear()  # the score of the run and the round asked (predict mode stays on or off)
    notation, status = _notation(notation, lang)
    return session, view_of(session, notation, status if status.error else
                               Status("info", tr(lang, "msg.reset")), lang)


def follow_handler(session, notation, shown_step, lang: str = "en"):
    """After a Step's or tick's answer has landed: the view to redraw, or None. Redrawn: views drawn in another
    language than #lang's now, and a page following the latest step that shows an older one (quick presses' Steps run
    in turn under the session's lock, but each answer is sent after the lock is let go, so an earlier Step's answer
    can land last). It reads the session without taking its lock: under Play, waiting for the lock waited for the
    next tick's round, found the page behind it and drew every step twice (a full run's browser test of Play saw a
    step skipped; docs/contributing.md)."""
    behind = (session.recorded is None and session.viewing is None and bool(session.traces)
              and shown_step != session.traces[-1].step)
    if session.drawn_lang == lang and not behind:
        return None
    session.drawn_lang = lang
    notation, status = _notation(notation, lang)
    return view_of(session, notation, status, lang)


@with_lock
def view_handler(session, notation, step, lang: str = "en"):
    notation, status = _notation(notation, lang)
    if step is not None and session.recorded is not None:
        status = view_step(session.recorded, step, lang)
    elif step is not None and session.traces:
        whole = isinstance(step, (int, float)) and not isinstance(step, bool) and float(step).is_integer()
        if whole and 1 <= step <= len(session.traces):
            session.viewing = int(step)
        else:
            status = Status("error", tr(lang, "err.view_step", hi=len(session.traces), value=repr(step)))
    return session, view_of(session, notation, status, lang)


def intro(notation: str, lang: str = "en") -> str:
    """The longer introduction under the settings (Markdown), in the notation's letters; key hints
    sit in a span the page hides on touch screens."""
    t, d = letters(notation)
    return tr(lang, "intro", t=t, d=d) + f'\n\n<span class="key-hint">{tr(lang, "keys")}</span>'


def what_you_see(lang: str = "en") -> str:
    """The two claims a first-time visitor needs, above the fold: exact in distribution, 1 + accepted per pass."""
    return f'<div class="what">{tr(lang, "what")}</div>'
