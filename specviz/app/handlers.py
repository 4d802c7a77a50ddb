"""What each event does to a tab's Session: step, Play ticks, Pause, Reset, view a step.

Gradio-free functions of (session, settings) -> (session, view), each under the session's lock,
so the tests drive them without a server and wiring.py only connects them to components.
"""
from __future__ import annotations

from ..core.notation import letters
from ..engine.decoders import DecodingFinished
from ..engine.presets import ModelLoadError
from ..present.render import Status
from ..present.views import Session, View, build_view, settings_from, step_session, with_lock

SESSION_TTL_S = 15 * 60      # an idle tab's run is freed after this long (gr.State time_to_live)
SESSION_CAPACITY = 1000      # gradio's per-session copies of the page, least recently used out
QUEUE_STATUS_S = 1.0         # queued visitors' positions refresh each second, not after every event


def _step(session: Session, notation: str, knobs) -> tuple[View, Status]:
    try:
        status = step_session(session, settings_from(*knobs))
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


INTRO = """A small **draft** model guesses γ tokens; the large **target** model checks all of them in **one**
forward pass. Each guess is kept when a uniform draw u falls below min(1, {t}/{d}); at the first rejection a
replacement is drawn from the *residual* norm(max(0, {t} − {d})); if all are kept, the target adds a *bonus*
token. The output is distributed **exactly** as the target alone would sample it (at temperature 0 this reduces
to "keep drafts while the argmaxes agree"), yet each target pass can yield several tokens.
Keys: <kbd>s</kbd> Step, <kbd>p</kbd> Play/Pause; Tab + Enter on a token shows its step."""


def intro(notation: str) -> str:
    t, d = letters(notation)
    return INTRO.format(t=t, d=d)
