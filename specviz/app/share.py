"""The page's link to a step and its recorded runs: #share makes a link, a link opens at its step, a trace file
or a lesson opens as a recording that Step, Play and #view-step move through (no model runs).

The recipe and the replay check are present/share.py's, the recorded view present/recorded.py's; here are the
components, the handlers under the tab's lock and their events. A trace file is read in the browser and sent as
text: the server never writes it to disk, and keeps it only in the tab's session, bounded in bytes and steps.
"""
from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import gradio as gr

from ..core.recipe import Recipe, RecipeError, encode_recipe, token_digest
from ..core.tracefile import TraceFileError, read_recording
from ..engine.limits import event_deadline
from ..engine.models.presets import ModelLoadError
from ..engine.settings import current as current_deployment
from ..present.i18n import tr
from ..present.recorded import LESSONS, Playback, open_lesson, opening, race_view, recorded_label, view_of
from ..present.render import Status, message_html
from ..present.share import LINK_SETTINGS, link_recipe, read_link, replay
from ..present.views import Session, with_lock
from .handlers import _failure, _notation, check_lang

TOO_LARGE = '{"too_large_bytes": '     # what page.js sends instead of a file over its bound
PUBLIC_TRACE_BYTES, PUBLIC_TRACE_STEPS = 1_000_000, 1_000    # a visitor's upload on a server others can reach
LOCAL_TRACE_BYTES, LOCAL_TRACE_STEPS = 20_000_000, 20_000    # this machine only: a whole report


def trace_bounds() -> tuple[int, int]:
    """(bytes, steps) a trace file opened in the page may have here."""
    exposed = current_deployment().exposed
    return (PUBLIC_TRACE_BYTES, PUBLIC_TRACE_STEPS) if exposed else (LOCAL_TRACE_BYTES, LOCAL_TRACE_STEPS)


@dataclass(frozen=True, eq=False)
class ShareBar:
    """A link to the step shown (#share, #share-link), the lessons (#lesson) and a trace file (#trace-file)."""
    share_btn: object
    link: object
    lesson: object
    trace_picker: object
    trace_text: object    # the file's text, filled by the page's script (hidden)
    link_in: object       # the recipe of the link the page was opened with (hidden)
    page_url: object      # the page's address, for the link (hidden)


def lesson_choices(lang: str = "en") -> list[tuple[str, str]]:
    return [(tr(lang, f"lesson.{name}.title"), name) for name in LESSONS]


def share_bar(T) -> ShareBar:
    """The components, created in the caller's layout block."""
    with gr.Row(elem_id="share-row"):
        share_btn = gr.Button(T("share.button"), elem_id="share", scale=0, min_width=160)
        link = gr.Textbox(label=T("share.link"), elem_id="share-link", interactive=False, buttons=["copy"], scale=3,
                          max_lines=1, min_width=200)
        lesson = gr.Dropdown(lesson_choices(), value=None, label=T("lesson.label"), elem_id="lesson", scale=1,
                             min_width=180)
        trace_picker = gr.HTML(f'<label class="trace-pick">{T("recorded.open")}<input type="file" '
                               f'accept=".jsonl,.json" id="trace-file-input"></label>', elem_id="trace-file",
                               min_height=0, scale=1)
    trace_text = gr.Textbox(visible="hidden", elem_id="trace-text")
    link_in = gr.Textbox(visible="hidden", elem_id="share-open")
    page_url = gr.Textbox(visible="hidden", elem_id="page-url")
    return ShareBar(share_btn=share_btn, link=link, lesson=lesson, trace_picker=trace_picker, trace_text=trace_text,
                    link_in=link_in, page_url=page_url)


def link_url(base: str, recipe: str, lang: str, predict: bool = False) -> str:
    """The page's address with ?lang= set to the tab's language, ?predict=1 where the tab is in predict mode, other
    query values kept (?classroom=1), and #run=<recipe>."""
    parts = urlsplit(base if isinstance(base, str) else "")
    ours = [("lang", lang)] + ([("predict", "1")] if predict else [])
    if parts.scheme not in ("http", "https"):
        return f"?{urlencode(ours)}#run={recipe}"
    query = [(k, v) for k, v in parse_qsl(parts.query) if k not in ("lang", "run", "predict")] + ours
    return urlunsplit((parts.scheme, parts.netloc, parts.path, urlencode(query), f"run={recipe}"))


def recorded_recipe(playback: Playback, notation: str) -> str:
    """A link to a recording's step: its settings, its tokens' digest and its producer (the opener replays it)."""
    settings = {**playback.settings, "notation": notation}
    if set(settings) != set(LINK_SETTINGS) or playback.producer is None:
        raise RecipeError("this recording does not name every setting and its producer, so no link can rerun it")
    recipe = Recipe(settings=settings, step=playback.at, digest=token_digest(playback.run.traces, playback.at),
                    producer=playback.producer)
    return encode_recipe(recipe)


@with_lock
def share_handler(session, notation, base, lang: str = "en"):
    """#share: (session, the link or "", status) for the step the tab shows."""
    notation, status = _notation(notation, lang)
    if status.error:
        return session, "", status
    try:
        if session.recorded is not None:
            recipe = recorded_recipe(session.recorded, notation)
        elif session.run is not None and session.traces:
            recipe = link_recipe(session.run, session.viewing or len(session.traces), notation)
        else:
            return session, "", Status("error", tr(lang, "share.nothing"))
    except RecipeError as err:
        return session, "", Status("error", tr(lang, "share.cannot", detail=str(err)))
    return session, link_url(base, recipe, lang, session.predict.on), Status("info", tr(lang, "share.made"))


@with_lock
def open_link_handler(session, text, lang: str = "en"):
    """A link's recipe replayed to its step: (session, view, the recipe's settings or None, status)."""
    session.link_read = True  # from here #lang redraws the tab's own views (app/wiring.py on_lang)
    status = check_lang(lang)
    lang = "en" if status.error else lang
    try:
        recipe = read_link(text) if not status.error else None
    except RecipeError as err:
        status = Status("error", tr(lang, "share.bad", detail=str(err)))
    if status.error:
        return session, view_of(session, "leviathan", status, lang), None, status
    notation, status = _notation(recipe.settings["notation"], lang)
    if status.error:
        return session, view_of(session, notation, status, lang), None, status
    try:
        with event_deadline(current_deployment().event_timeout_s):
            run, why = replay(recipe, lang)
    except (ValueError, ModelLoadError, RuntimeError) as err:
        status = _failure(err, lang)
        return session, view_of(session, notation, status, lang), None, status
    if run is None:  # refused as too long for the event: the tab's own run stays as it was
        status = Status("error", why)
        return session, view_of(session, notation, status, lang), None, status
    session.keep_run()
    session.run, session.viewing, session.recorded, session.stepped, session.playing = run, None, None, True, False
    status = Status("error", why) if why else Status("info", tr(lang, "share.opened", step=recipe.step,
                                                                digest=recipe.digest,
                                                                where=recorded_label(recipe.producer, lang)))
    return session, view_of(session, notation, status, lang), recipe.settings, status


@with_lock
def open_trace_handler(session, text, notation, lang: str = "en"):
    """A trace file's text (read in the browser): its first run opens as the tab's recording."""
    notation, status = _notation(notation, lang)
    if status.error:
        return session, view_of(session, notation, status, lang)
    max_bytes, max_steps = trace_bounds()
    try:
        if not isinstance(text, str) or not text.strip():
            raise TraceFileError(tr(lang, "recorded.empty"))
        if text.startswith(TOO_LARGE):  # the page's script refused to read it (page.js)
            raise TraceFileError(tr(lang, "recorded.too_large", size=text[len(TOO_LARGE):].strip().strip(" }"), most=max_bytes))
        recording = read_recording(text.encode("utf-8"), max_bytes=max_bytes, max_steps=max_steps,
                                   name=tr(lang, "recorded.the_file"))
        session.recorded = Playback.of(recording)
    except TraceFileError as err:
        return session, view_of(session, notation, Status("error", tr(lang, "recorded.bad", detail=str(err))), lang)
    session.playing, session.viewing = False, None
    opened = tr(lang, "recorded.opened", steps=session.recorded.total, runs=len(recording.runs))
    return session, view_of(session, notation, Status("info", opened), lang)


@with_lock
def open_lesson_handler(session, name, notation, lang: str = "en"):
    """A lesson from the menu opens as the tab's recording at its first step."""
    notation, status = _notation(notation, lang)
    if name is None or status.error:
        return session, view_of(session, notation, status, lang)
    playback = open_lesson(name) if isinstance(name, str) and name in LESSONS else None
    if playback is None:
        return session, view_of(session, notation, Status("error", tr(lang, "lesson.missing", name=repr(name))), lang)
    session.recorded, session.playing, session.viewing = playback, False, None
    return session, view_of(session, notation, Status("info", tr(lang, "lesson.opened")), lang)


# The page's address and the recipe of the link it was opened with (#run=… or ?run=…), read once on load (by the
# page's one load event, with its language: app/wiring.py INITIAL_JS).
READ_LINK_JS = """() => {
  const hash = new URLSearchParams(location.hash.replace(/^#/, ''));
  const query = new URLSearchParams(location.search);
  return [hash.get('run') || query.get('run') || '', location.href.split('#')[0]];
}"""


def wire_share(demo: gr.Blocks, page, views: list, model_queue: dict, inputs: dict) -> None:
    """The link and the recordings' events. `views`: the components a View fills, in View's order (after the
    session); `inputs`: the components of LINK_SETTINGS by name, which a link's settings fill, so the next Step
    continues the same run."""
    bar, session, lang, notation = page.share, page.session, page.toolbar.lang, page.settings.notation
    race = page.step.race
    knobs = [inputs[name] for name in LINK_SETTINGS]
    message = page.controls.message

    def shown(s, view, status):
        return {session: s, **dict(zip(views, view)), message: message_html(status)}

    def on_share(s, n, base, code):
        s, link, status = share_handler(s, n, base, lang=code)
        return {session: s, bar.link: link, message: message_html(status)}

    def on_open_link(s, text, code):
        if not text:  # a page opened without a link
            return {session: gr.skip()}
        s, view, settings, status = open_link_handler(s, text, lang=code)
        chosen = {c: settings[name] for c, name in zip(knobs, LINK_SETTINGS)} if settings else {}
        return {**shown(s, view, status), **chosen}

    def on_trace(s, text, n, code):
        s, view = open_trace_handler(s, text, n, lang=code)
        return {session: s, **dict(zip(views, view)), race: race_view(s, code) or gr.skip()}

    def on_lesson(s, name, n, code):
        s, view = open_lesson_handler(s, name, n, lang=code)
        return {session: s, **dict(zip(views, view)), race: race_view(s, code) or gr.skip()}

    bar.share_btn.click(on_share, [session, notation, bar.page_url, lang], [session, bar.link, message],
                        api_name="share", concurrency_limit=None)
    bar.link_in.change(on_open_link, [session, bar.link_in, lang], [session, *views, message, *knobs],
              api_visibility="private", show_progress="minimal", **model_queue)
    gr.api(open_link_api, api_name="open_link", concurrency_limit=model_queue["concurrency_limit"])
    bar.trace_text.change(on_trace, [session, bar.trace_text, notation, lang], [session, *views, race],
                         api_visibility="private", concurrency_limit=None)
    bar.lesson.input(on_lesson, [session, bar.lesson, notation, lang], [session, *views, race], api_visibility="private",
                     concurrency_limit=None)
    lang.change(lambda code: gr.Dropdown(choices=lesson_choices(code)), lang, bar.lesson, api_visibility="private")


def open_link_api(recipe: str, lang: str = "en") -> dict:
    """Replay a link's recipe (the whole link or its `v1.…` part) to its step: the step's card and round summary
    as HTML, the reproduced digest and whether it matches the link's, or the message naming what is wrong."""
    session, view, settings, status = open_link_handler(Session(), recipe, lang=lang)
    run = session.run
    return {"ok": settings is not None and not status.error, "message": status.text,
            "step": len(run.traces) if run else None,
            "digest": token_digest(run.traces) if run and run.traces else None,
            "step_card": view.step_card, "round_summary": view.round_summary}


def show_opening(views: list, race) -> None:
    """The components a View fills start with the opening lesson's first step, and #race with its recorded race
    (in English: a page in another language redraws them on #lang, still without a model), so the page's first
    paint is a recorded round."""
    view = opening()
    if view is None:
        return
    for component, value in zip(views, view):
        if value is not None and component.__class__.__name__ != "Number":
            component.value = component.postprocess(value)
    race.value = race.postprocess(race_view(Session()))
