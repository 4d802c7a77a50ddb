"""Predict mode's panel as HTML: #score (right answers of this run) and #question, the question being asked with
its choices as buttons (letters A-D, keys 1-4), then the answer marked and one sentence of why, with the round's
own numbers ("u = 0.62 ≥ 0.40 = min(1, p/q): rejected").

#question carries data-state (idle, asking, answered, placed: the yield's bet, settled at the round's end; shown),
data-open ("1" while the round is still being
asked: Step moves through it), data-result ("right" or "wrong", once answered), data-at (the question's
number, sent back with each button so a late click never answers the next question), data-last on the round's
last question (its answer also settles a bet placed: the page leaves room for that longer line) and
data-reveals="0" where the answer shows no part of the card (a bet, a misconception).
"""
from __future__ import annotations

import html

from ..core.answer_key import Choice, Question
from ..core.notation import NOTATIONS, letters, num, show
from .i18n import tr
from .myths import BY_ID, pointer, texts
from .predict import Predict
from .render import decisive

LETTERS = "ABCD"
ARIA_DONE = ' aria-disabled="true"'  # a settled choice stays legible (a disabled button would be greyed out)
FORMULAS = {  # what each number offered for a chance was, shown once the question is answered
    "min": "min(1, {t}/{d})", "exact": "min(1, {t}/{d})", "ratio": "{t}/{d}", "p": "{t}(x)", "q": "{d}(x)", "one": "1",
    "zero": "0", "rest": "1 − min(1, {t}/{d})", "inverse": "min(1, {d}/{t})", "product": "{t}(x)·{d}(x)",
}


def notation_of(target_letter: str) -> str:
    """The notation whose target letter this is (the misconceptions' texts take a notation, not letters)."""
    return next(key for key, (t, _, _) in NOTATIONS.items() if t == target_letter)


def _code(text: str) -> str:
    return f"<code>{html.escape(show(text))}</code>"


def _choice_text(q: Question, c: Choice, predict: Predict, lang: str, t: str, d: str) -> str:
    """A choice's label: a number (the yield, a chance), a token (several drafts) or words."""
    if q.kind == "myth":
        return texts(BY_ID[q.topic], lang, notation_of(t))["answers"][int(c.key[1:])]
    if q.kind == "yield":
        return f"{c.value:g}"
    if c.key.startswith("node"):
        return _code(c.text)
    if q.kind == "chance" and c.value is not None:
        answered = predict.state != "asking" or predict.done
        formula = (tr(lang, "c.mentored_chance") if c.key == "mentored" else FORMULAS[c.key].format(t=t, d=d))
        return f'{num(c.value)}<span class="q-what">{" = " + formula if answered else ""}</span>'
    if c.key in ("kept", "rejected"):
        return tr(lang, "verdict.accepted" if c.key == "kept" else "verdict.rejected")
    return tr(lang, f"c.{c.key}", t=t, d=d)


def _prompt(q: Question, predict: Predict, lang: str, t: str, d: str) -> str:
    """The question, with what the card already shows of the decision (q(x), p(x), u, the argmax)."""
    trace = predict.trace
    if q.kind == "myth":
        return texts(BY_ID[q.topic], lang, notation_of(t))["q"]
    if q.kind == "yield":
        return tr(lang, "q.yield", most=(trace.gamma if trace.tree else len(trace.positions)) + 1)
    if q.kind == "depth":
        return tr(lang, "q.depth", k=trace.drafts, t=t)
    if q.kind == "source":
        lossy = " " + tr(lang, "q.lossy", t=t, d=d) if trace.kl_budget > 0 else ""
        return tr(lang, "q.source_none" if not trace.positions else "q.source") + lossy
    pos = trace.positions[q.position]
    at = dict(i=q.position + 1, token=_code(pos.draft_text), t=t, d=d, q=num(pos.draft_prob), p=num(pos.target_prob))
    if q.kind == "chance" and trace.greedy:
        return tr(lang, "q.chance_greedy", argmax=_code(pos.candidates[0].text), **at)
    if q.kind == "chance":
        return tr(lang, "q.chance", **at) + (" " + tr(lang, "q.lossy", t=t, d=d) if trace.kl_budget > 0 else "")
    u, c = decisive(pos.uniform, pos.accept_prob)
    return tr(lang, "q.kept_mentored" if trace.kl_budget > 0 else "q.kept", u=u, c=c, **at)


def why(q: Question, predict: Predict, lang: str, t: str, d: str) -> str:
    """One sentence that says why the answer is right, with the round's own numbers."""
    trace = predict.trace
    if q.kind == "myth":  # with the button that shows the evidence (page.js opens its tab or accordion)
        said = texts(BY_ID[q.topic], lang, notation_of(t))
        return f'{said["why"]} {pointer(BY_ID[q.topic], said["see"])}'
    if q.kind == "depth":
        if not trace.tree.path:
            return tr(lang, "w.depth_none", t=t, d=d)
        node = trace.tree.nodes[trace.tree.path[0]]
        return tr(lang, "w.depth_kept", token=_code(node.text), n=sum(x.depth == 0 for x in trace.tree.tries))
    if q.kind == "source":
        return _why_source(trace, lang, t, d)
    pos = trace.positions[q.position]
    at = dict(token=_code(pos.draft_text), t=t, d=d, p=num(pos.target_prob), q=num(pos.draft_prob))
    if q.kind == "chance" and trace.greedy:
        one = pos.accept_prob >= 0.5
        return tr(lang, "w.chance_greedy_one" if one else "w.chance_greedy_zero", argmax=_code(pos.candidates[0].text), **at)
    if q.kind == "chance":
        key = "w.chance_mentored" if trace.kl_budget > 0 else "w.chance_lookup" if trace.source.kind == "lookup" else "w.chance"
        return tr(lang, key, c=num(pos.accept_prob), e=num(pos.exact_accept_prob), **at)
    u, c = decisive(pos.uniform, pos.accept_prob)
    verdict = tr(lang, f"verdict.{pos.verdict}")
    cmp = "&lt;" if pos.verdict == "accepted" else "≥"
    if trace.kl_budget > 0:
        differs = (pos.uniform < pos.exact_accept_prob) != (pos.verdict == "accepted")
        note = (f' <span class="exact-would">⚠ {tr(lang, "mentored.exact_rejects" if pos.verdict == "accepted" else "mentored.exact_accepts")}'
                f'</span>' if differs else "")
        return tr(lang, "w.kept_mentored", u=u, c=c, cmp=cmp, verdict=verdict) + note
    rule = f"{t}(x)" if trace.source.kind == "lookup" else f"min(1, {t}/{d})"
    return tr(lang, "w.kept", u=u, c=c, cmp=cmp, rule=rule, verdict=verdict)


def _why_source(trace, lang: str, t: str, d: str) -> str:
    c = trace.correction
    token = _code(c.text)
    if trace.greedy:
        return tr(lang, "w.source_greedy", token=token, t=t)
    if not trace.positions:
        return tr(lang, "w.source_none", token=token, t=t)
    if c.kind == "bonus":
        return tr(lang, "w.source_bonus", token=token, t=t, g=len(trace.positions) if trace.tree is None else trace.gamma)
    key = "w.source_mentored" if trace.kl_budget > 0 else "w.source_tree" if trace.tree else "w.source_residual"
    return tr(lang, key, token=token, t=t, d=d, pos=c.position + 1)


def _bet(predict: Predict, lang: str) -> str:
    """The yield bet: placed (waiting for the round's end) or settled."""
    if predict.bet is None:
        return ""
    q, index = predict.bet
    placed = int(q.choices[index].value)
    if not predict.done:
        return f'<div class="q-bet">{tr(lang, "q.bet", n=placed)}</div>'
    got = int(q.answer.value)
    trace = predict.trace
    kept = tr(lang, "w.yield", a=trace.n_accepted, kind=tr(lang, f"kind.{trace.correction.kind}"), n=got)
    mark = tr(lang, "q.bet_right", n=placed) if placed == got else tr(lang, "q.bet_wrong", n=placed, m=got)
    return f'<div class="q-bet" data-result="{"right" if placed == got else "wrong"}">{mark} {kept}</div>'


def score_html(predict: Predict, lang: str) -> str:
    """The run's score; until its first answer, a new run says what the run before it scored (a student whose
    score went back to 0 sees why)."""
    last = predict.last if not predict.asked else None
    said = f' <span class="score-last">{tr(lang, "score_last", r=last[0], a=last[1])}</span>' if last else ""
    return (f'<div id="score" data-right="{predict.right}" data-asked="{predict.asked}">'
            f'{tr(lang, "score", r=predict.right, a=predict.asked)}{said}</div>')


def _buttons(q: Question, predict: Predict, lang: str, t: str, d: str) -> str:
    settled = predict.state in ("answered", "shown") or predict.done  # a bet placed shows its choice, not the answer
    out = []
    for i, c in enumerate(q.choices):
        marks = (" right" if settled and i == q.right else "") + (" chosen" if i == predict.chosen else "")
        out.append(f'<button class="q-choice{marks}" data-choice="{i}" data-at="{predict.at}"'
                   f'{ARIA_DONE if settled else ""}><span class="q-letter">{LETTERS[i]}</span> '
                   f'{_choice_text(q, c, predict, lang, t, d)}</button>')
    return "".join(out)


def question_html(predict: Predict, lang: str = "en", notation: str = "leviathan") -> str:
    """#question as it stands: idle (no round asked), asking, answered or shown; data-open while Step moves
    through the round."""
    t, d = letters(notation)
    q = predict.current if predict.showing else None
    if q is None:
        return f'<div id="question" data-state="idle" data-open="0"><div class="q-prompt">{tr(lang, "q.idle")}</div></div>'
    state = predict.state
    result = "" if state != "answered" else f' data-result="{"right" if predict.chosen == q.right else "wrong"}"'
    mark = ("" if state == "asking" else tr(lang, "q.shown") if state == "shown" else tr(lang, "q.right")
            if predict.chosen == q.right else tr(lang, "q.wrong", letter=LETTERS[q.right]))
    said = (f'<div class="q-why"><b class="q-mark">{mark}</b> {why(q, predict, lang, t, d)}</div>'
            if state in ("answered", "shown") else "")
    step = (tr(lang, "q.done") if predict.done else tr(lang, "q.next") if state != "asking" else tr(lang, "q.reveal"))
    count = tr(lang, "q.count", n=predict.at + 1, m=len(predict.questions))
    go = (f'<span class="q-done">{step}</span>' if predict.done else
          f'<button class="q-step" data-choice="next" data-at="{predict.at}">{step}</button>'
          f'<span class="key-hint">{tr(lang, "q.keys")}</span>')
    # the answer's sentence, the bet and the way on: three cells, so a phone can give the sentence the whole width
    foot = (f'<div class="q-foot"><div class="q-said" aria-live="polite">{said}</div>'
            f'<div class="q-betting" aria-live="polite">{_bet(predict, lang)}</div><div class="q-go">{go}</div></div>')
    last = ' data-last="1"' if predict.at == len(predict.questions) - 1 else ""
    later = "" if q.reveals else ' data-reveals="0"'  # its answer shows no part of the card now (a bet, a myth)
    return (f'<div id="question" data-state="{state}" data-open="{int(predict.open)}" data-kind="{q.kind}" '
            f'data-at="{predict.at}"{result}{last}{later}><div class="q-prompt"><span class="q-count">{count}</span> '
            f'{_prompt(q, predict, lang, t, d)}</div><div class="q-choices">{_buttons(q, predict, lang, t, d)}</div>'
            f'{foot}</div>')


def panel_html(predict: Predict, lang: str = "en", notation: str = "leviathan") -> str:
    """The panel under the card: the score, then the question."""
    return f'<div class="predict-panel">{score_html(predict, lang)}{question_html(predict, lang, notation)}</div>'
