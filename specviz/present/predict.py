"""Predict mode (#predict, ?predict=1): a round on the card stops at each decision and asks about it first.

Crouch, Fagen, Callan and Mazur, "Classroom demonstrations: Learning tools or entertainment?" (Am. J. Phys. 72,
2004): students who predicted a demonstration's outcome understood it better than those who only watched it.

A tab's `Predict` (in its Session, never shared) keeps whether the mode is on, the score of the run shown and
where the round being asked stands: which question (`core.answer_key`), answered or passed over. The card,
summary, text and counters of that round are drawn with the parts after the current question hidden (in place);
an answer shows the decision with one sentence of the round's own numbers. The yield question ("how many tokens
will this pass give?") is a bet, settled when the round ends. Step (or s) passes over a question unscored.
"""
from __future__ import annotations

from ..core.answer_key import Question, card_parts, questions
from .myths import myth_question
from .parts import NOTHING_HIDDEN

CHOICES = ("0", "1", "2", "3")   # what a choice button sends; "next" passes over or moves on


class Predict:
    """One tab's predict mode: on or off, the score of the run shown, the round being asked."""

    def __init__(self):
        self.on = False
        self.right = 0
        self.asked = 0
        self.run = None        # the run the score counts: a new run (settings, a lesson, a link) starts a new count
        self.last: tuple[int, int] | None = None  # (right, asked) of the run before, said once a new run starts
        self.showing = False   # the round asked is the one on the card
        self.forget()

    def forget(self) -> None:
        """Let go of the round being asked (the score stays)."""
        self.trace = None      # the round asked (its StepTrace object)
        self.questions: list[Question] = []
        self.at = 0            # the question shown
        self.state = "asking"  # "asking", "answered" (scored), "placed" (the yield's bet) or "shown" (passed over)
        self.chosen: int | None = None
        self.bet: tuple[Question, int] | None = None   # the yield question and the choice, settled at the end
        self.done = False      # every decision of the round shown

    def clear(self) -> None:
        """Reset: no score, no round."""
        self.right = self.asked = 0
        self.run, self.last = None, None
        self.showing = False
        self.forget()

    def switch(self, on: bool) -> None:
        self.on = bool(on)
        if not self.on:
            self.forget()
            self.showing = False

    def carry(self, run) -> None:
        """The score goes on into `run`: the opening lesson's round the class answered, drawn again live as its first
        step (the same settings and seed), so the live run continues what was scored rather than starting anew."""
        self.run = run

    def shown(self, run, trace, latest: bool = True, asks: tuple = ()) -> frozenset:
        """The parts of `trace`'s card to hide as it is drawn now. A round newly on the card, the latest of its run,
        starts being asked (`asks`: a lesson's misconceptions asked first); a new run starts a new score."""
        if run is not self.run:
            last = (self.right, self.asked) if self.asked else None
            self.clear()
            self.run, self.last = run, last
        self.showing = self.on and latest and trace is not None
        if not self.showing:
            return NOTHING_HIDDEN
        if trace is not self.trace:
            self.forget()
            self.trace = trace
            self.questions = [*filter(None, (myth_question(a) for a in asks)), *questions(trace)]
        return self.hidden()

    def hidden(self) -> frozenset:
        """The card parts from the current question's on (its own included until it is answered)."""
        if self.trace is None or self.done or not self.questions:
            return NOTHING_HIDDEN
        parts = card_parts(self.trace)
        q = self.current
        cut = parts.index(q.before) + (1 if self.state != "asking" and q.reveals else 0)
        return frozenset(parts[cut:])

    @property
    def current(self) -> Question | None:
        return self.questions[self.at] if self.trace is not None and self.questions else None

    @property
    def open(self) -> bool:
        """A round is being asked on the card: Step moves through it instead of running the next round."""
        return self.on and self.showing and self.current is not None and not self.done

    def act(self, choice, at) -> bool:
        """A choice button ("0"-"3") or "next", sent for question number `at`; False when it is stale or not one."""
        if not self.open or not isinstance(at, (int, str)) or str(at) != str(self.at):
            return False
        if choice == "next":
            self.advance()
            return True
        if choice not in CHOICES or int(choice) >= len(self.current.choices):
            return False
        return self.answer(int(choice))

    def answer(self, index: int) -> bool:
        if self.state != "asking":
            return False
        q = self.current
        if q.kind == "yield":  # a bet: placed now, scored when the round ends; Step moves on, as after any answer
            self.bet, self.chosen, self.state = (q, index), index, "placed"
            return True
        self.chosen, self.state = index, "answered"
        self.asked += 1
        self.right += index == q.right
        if self.at == len(self.questions) - 1:
            self._finish()
        return True

    def advance(self) -> None:
        """Step in a round being asked: show the current decision unanswered (no score), or go to the next one."""
        if self.state == "asking" and self.current.kind != "yield":
            self.state = "shown"
            if self.at == len(self.questions) - 1:
                self._finish()
        else:
            self._next()

    def _next(self) -> None:
        if self.at == len(self.questions) - 1:
            self._finish()
            return
        self.at += 1
        self.state, self.chosen = "asking", None

    def _finish(self) -> None:
        self.done = True
        if self.bet is not None:
            q, index = self.bet
            self.asked += 1
            self.right += index == q.right


def conceal(html: str, hidden: frozenset) -> str:
    """The round's outcome (summary, counters) kept in place but hidden while its decisions are still asked."""
    return f'<div class="sv-hidden" data-part="end">{html}</div>' if "end" in hidden else html
