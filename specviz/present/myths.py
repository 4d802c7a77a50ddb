"""Misconceptions as questions (#myths): five common beliefs about speculative decoding, each asked before the
page shows its evidence, each answer (right or wrong) explained and pointing to the element that shows it.

The panel answers in the browser (page.js reads each choice's data-right): nothing is sent, nothing is scored. A
lesson may ask the same questions in predict mode (`myth_question`), where they count like the round's.
Texts are catalogue keys myth.<id>.q, .a0 … .a2, .why, .see; the right answers are facts, so they are data here.
"""
from __future__ import annotations

import html
import json
import random
import zlib
from dataclasses import dataclass

from ..core.answer_key import Choice, Question
from ..core.notation import letters
from ..core.theory import expected_speedup
from .i18n import tr


@dataclass(frozen=True)
class Myth:
    id: str
    right: int            # the index of the right answer among myth.<id>.a0, a1, a2
    goto: str             # the elem_id of the element that shows the evidence
    opens: str = ""       # the tab or accordion (elem_id) that holds it, opened first (gradio draws a closed one's later)
    press: str = ""       # a button the pointer presses there (e.g. the playground's run)
    fill: tuple = ()      # (elem_id, value) pairs the pointer types first (the what-if panel's example)
    answers: int = 3


# The speed-up example (Leviathan et al., Theorem 3.8): a draft accepted more often that costs more, beside one
# accepted less often that costs little, at the same gamma.
GAMMA, COSTLY, CHEAP = 4, (0.9, 0.6), (0.7, 0.05)   # (acceptance rate alpha, cost ratio c)


def _curve(alpha: float, gamma: int) -> str:
    """The what-if panel's per-position acceptance for a constant alpha: alpha, alpha^2, ..., alpha^gamma."""
    return ", ".join(f"{alpha ** i:.3g}" for i in range(1, gamma + 1))


MYTHS = (
    Myth("argmax", 1, "pg-histogram", opens="playground", press="pg-run"),   # Kylin's post; the playground's wrong rule
    Myth("same-text", 1, "race"),                              # the race: same settings and seed, two texts
    Myth("speedup", 1, "whatif-panel", opens="debug", press="whatif-run",
         fill=(("whatif-curve", _curve(COSTLY[0], GAMMA)), ("whatif-cost", str(COSTLY[1])), ("whatif-gammas", str(GAMMA)))),
    Myth("wasted", 1, "pg-decomposition", opens="playground"),  # a rejection still yields one token: the residual
    Myth("family", 1, "drafter"),                              # prompt lookup: no model at all
)
BY_ID = {m.id: m for m in MYTHS}


def order(myth: Myth) -> list[int]:
    """The answers' order on the page: shuffled once per myth (seeded by its id), the same in every language."""
    shown = list(range(myth.answers))
    random.Random(zlib.crc32(myth.id.encode())).shuffle(shown)
    return shown


def texts(myth: Myth, lang: str, notation: str = "leviathan") -> dict:
    """The question, its answers (in catalogue order), why and the pointer's label, in `lang` and the notation."""
    t, d = letters(notation)
    speed = {"a": f"{expected_speedup(COSTLY[0], GAMMA, COSTLY[1]):.2f}", "b": f"{expected_speedup(CHEAP[0], GAMMA, CHEAP[1]):.2f}",
             "fa": f"{COSTLY[0]:g}", "fc": f"{COSTLY[1]:g}", "sa": f"{CHEAP[0]:g}", "sc": f"{CHEAP[1]:g}", "g": GAMMA}
    args = {"t": t, "d": d, **(speed if myth.id == "speedup" else {})}
    key = f"myth.{myth.id}"
    return {"q": tr(lang, f"{key}.q", **args), "answers": [tr(lang, f"{key}.a{i}", **args) for i in range(myth.answers)],
            "why": tr(lang, f"{key}.why", **args), "see": tr(lang, f"{key}.see", **args)}


def myth_question(myth_id: str) -> Question | None:
    """A misconception asked in predict mode (a lesson's round asks it before its draft), or None if unknown."""
    myth = BY_ID.get(myth_id)
    if myth is None:
        return None
    shown = order(myth)
    return Question("myth", -1, tuple(Choice(f"a{i}") for i in shown), shown.index(myth.right), "draft",
                    reveals=False, topic=myth.id)


def pointer(myth: Myth, label: str) -> str:
    """The button that shows the evidence: page.js opens its tab or accordion, types `fill`, presses `press`."""
    fill = html.escape(json.dumps(dict(myth.fill)), quote=True)
    return (f'<button class="myth-see" data-goto="{myth.goto}" data-opens="{myth.opens}" data-press="{myth.press}" '
            f'data-fill="{fill}">'
            f'{html.escape(label)} ▸</button>')


def myth_html(n: int, myth: Myth, lang: str, notation: str) -> str:
    said = texts(myth, lang, notation)
    buttons = "".join(
        f'<button class="myth-choice" data-choice="{k}" data-right="{int(i == myth.right)}"><span class="q-letter">'
        f'{"ABCD"[k]}</span> {said["answers"][i]}</button>' for k, i in enumerate(order(myth)))
    return (f'<div class="myth" data-myth="{myth.id}"><div class="myth-q"><b>{n}.</b> {said["q"]}</div>'
            f'<div class="myth-choices">{buttons}</div><div class="myth-why" hidden><b class="myth-mark"></b> '
            f'{said["why"]} {pointer(myth, said["see"])}</div></div>')


def myths_html(lang: str = "en", notation: str = "leviathan") -> str:
    """The #myths panel's questions, in `lang`; data-right-text / data-wrong-text are the marks page.js writes."""
    items = "".join(myth_html(n, m, lang, notation) for n, m in enumerate(MYTHS, 1))
    return (f'<div class="myths" data-right-text="{html.escape(tr(lang, "q.right"))}" '
            f'data-wrong-text="{html.escape(tr(lang, "q.wrong_myth"))}"><p class="muted">{tr(lang, "myths.intro")}</p>'
            f'{items}</div>')
