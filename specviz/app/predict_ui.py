"""Predict mode on the page: the #predict switch, the panel under the card (#score, #question), #algorithm beside
the card and the misconceptions (#myths); their components and events.

The questions, the answer key and the score are present/'s (predict.py, question_panel.py, myths.py); here a
choice button's click reaches the tab's session as the panel's own "answer" event (gr.HTML's js_on_load and
trigger), handled under the tab's lock, unqueued: an answer never waits behind another visitor's round.
"""
from __future__ import annotations

from dataclasses import dataclass

import gradio as gr

from ..present.algorithm import algorithm_html
from ..present.myths import myths_html
from ..present.predict import Predict
from ..present.question_panel import panel_html
from ..present.recorded import view_of
from ..present.views import Session, with_lock
from .handlers import _notation, check_lang

# A choice button (or Next, which page.js also presses for Step and s in a round being asked) sends its choice and
# the question's number; the server ignores one that arrives for a question already moved past.
ANSWER_JS = """element.addEventListener('click', (e) => {
  const b = e.target.closest && e.target.closest('#question [data-choice]');
  if (b && b.getAttribute('aria-disabled') !== 'true') trigger('answer', {choice: b.dataset.choice, at: b.dataset.at});
});"""
TOGGLE_JS = "(on) => { document.body.classList.toggle('predict', !!on); }"


@dataclass(frozen=True, eq=False)
class PredictParts:
    """The components of predict mode beside the step view's."""
    panel: object      # #score and #question (the component's own id: predict-panel)
    algorithm: object  # #algorithm
    myths: object      # the questions inside the #myths accordion


def predict_switch(T):
    """#predict, in the toolbar beside classroom mode and the phase reveal (also ?predict=1 in the URL)."""
    return gr.Checkbox(False, label=T("lbl.predict"), elem_id="predict", container=False, scale=0, min_width=160)


def algorithm_panel():
    """#algorithm, made inside the row of the step card: shown with predict mode or the phase reveal."""
    return gr.HTML(algorithm_html(), elem_id="algorithm", min_height=0, scale=1, min_width=260)


def question_panel():
    """The panel under the card: hidden until predict mode is on (page.css)."""
    return gr.HTML(panel_html(Predict()), elem_id="predict-panel", min_height=0, js_on_load=ANSWER_JS)


def myths_accordion(T):
    with gr.Accordion(T("myths.head"), open=False, elem_id="myths"):
        return gr.HTML(myths_html(), elem_id="myths-list", min_height=0)


@with_lock
def answer_handler(session, choice, at, notation, lang: str = "en"):
    """A choice or Next in the round being asked: (session, its view, the panel) in `lang`; a stale or
    malformed click changes nothing."""
    notation, status = _notation(notation, lang)
    if check_lang(lang).error:
        lang = "en"
    session.predict.act(choice, at)
    return _drawn(session, notation, status, lang)


@with_lock
def switch_handler(session, on, notation, lang: str = "en"):
    """#predict turned on or off: the round on the card is asked from its start, or shown whole."""
    notation, status = _notation(notation, lang)
    session.predict.switch(on is True)
    return _drawn(session, notation, status, lang)


def _drawn(session, notation, status, lang: str):
    """(session, its view, the panel), the panel recorded as the one the tab was sent (`panel_if_changed`)."""
    view = view_of(session, notation, status, lang)  # drawing the card may open its round's questions
    session.panel_sent = panel_html(session.predict, lang, notation)
    return session, view, session.panel_sent


@with_lock
def panel_if_changed(session, notation, lang: str = "en") -> str | None:
    """The panel as it stands, or None when it is what the tab was last sent. A redraw that follows the card is
    read before it is delivered; one read ahead of an answer can land after the answer's own panel, and so would
    show the question again as it was (a full run lost a "1" pressed then). Only a panel no answer or switch drew
    goes out."""
    notation, _ = _notation(notation, lang)
    html = panel_html(session.predict, lang if not check_lang(lang).error else "en", notation)
    if html == session.panel_sent:
        return None
    session.panel_sent = html
    return html


def wire_predict(page, views: list, updates) -> None:
    """The switch, an answer, and the panel, algorithm and myths following what the card shows, #lang and the
    notation. `views`: the components a View fills; `updates(view)`: their values by component."""
    session, lang, notation = page.session, page.toolbar.lang, page.settings.notation
    parts, switch, card = page.predict, page.toolbar.predict, page.step.step_card
    answered = [page.step.step_card, page.step.summary, page.step.timeline, page.step.counters]  # what an answer moves

    def on_switch(s, on, n, code):
        s, view, panel = switch_handler(s if isinstance(s, Session) else Session(), on, n, lang=code)
        return {session: s, **updates(view), parts.panel: panel}

    def on_answer(s, n, code, evt: gr.EventData):
        s, view, panel = answer_handler(s if isinstance(s, Session) else Session(), getattr(evt, "choice", None),
                                        getattr(evt, "at", None), n, lang=code)
        shown = updates(view)
        return {session: s, **{c: shown[c] for c in answered}, parts.panel: panel}

    def on_card(s, n, code):  # whatever redrew the card (Step, Reset, a lesson, #lang, ...): the panel follows
        if not isinstance(s, Session) or not s.predict.on:
            return gr.skip()  # hidden while predict mode is off; the switch draws it when turned on
        html = panel_if_changed(s, n, lang=code)
        return gr.skip() if html is None else html

    private = dict(api_visibility="private", concurrency_limit=None, show_progress="hidden")
    switch.change(on_switch, [session, switch, notation, lang], [session, *views, parts.panel], **private)
    switch.change(None, switch, None, js=TOGGLE_JS, api_visibility="private")
    # trigger_mode "multiple": the browser applies an answer's outputs (the next question drawn) a moment before it
    # marks the event done, and under the default "once" a choice pressed in that moment was dropped (a full run's
    # test lost its "1" so); each press is sent, in turn under the lock, and a stale one is ignored by its number
    parts.panel.answer(on_answer, [session, notation, lang], [session, *answered, parts.panel], trigger_mode="multiple",
                       **private)
    card.change(on_card, [session, notation, lang], parts.panel, **private)
    gr.on([lang.change, notation.change], lambda code, n: (algorithm_html(code, n), myths_html(code, n)),
          [lang, notation], [parts.algorithm, parts.myths], **private)
