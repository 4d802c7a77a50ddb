"""Predict mode without a browser: the key on real rounds of the bundled pair (T = 0, a KL budget, prompt lookup,
several drafts), a tab's round asked question by question, what stays hidden, the score, the panel, the algorithm
beside the card, the misconceptions and the lessons' questions."""
from __future__ import annotations

import json
import pathlib
import re

import pytest

from specviz.core import answer_key
from specviz.core.config import DecodeConfig
from specviz.engine.decoding.factory import make_decoder
from specviz.present import render
from specviz.present.algorithm import LINES, algorithm_html
from specviz.present.myths import MYTHS, myth_question, myths_html
from specviz.present.page_settings import DEFAULT_SEED
from specviz.present.predict import Predict
from specviz.present.question_panel import panel_html, question_html, score_html
from specviz.present.recorded import LESSONS, Playback, first_lesson, lesson_path, lesson_questions, view_of
from specviz.present.views import Session

APP = pathlib.Path(__file__).resolve().parents[2] / "specviz" / "app"
SETTINGS = {  # name: (prompt, config, rounds)
    "greedy": ("ROMEO.\nBut soft, what light", dict(temperature=0.0, seed=8), 4),
    "mentored": ("ROMEO.\nBut soft", dict(temperature=1.0, kl_budget=0.05, seed=3), 4),
    "lookup": ("ROMEO.\nWhat light, what light, what light, what light", dict(temperature=1.0, drafter="lookup", seed=1), 6),
    "tree": ("ROMEO.\nBut soft", dict(temperature=1.0, drafts=2, seed=4), 3),
    "greedy-tree": ("ROMEO.\nBut soft", dict(temperature=0.0, drafts=3, seed=0), 3),
    "exact": ("ROMEO.\nBut soft, what light", dict(temperature=1.0, seed=2), 3),
}


@pytest.fixture(scope="module")
def rounds(pair) -> dict:
    out = {}
    for name, (prompt, config, n) in SETTINGS.items():
        decoder = make_decoder(pair, prompt, DecodeConfig(gamma=4, max_new_tokens=60, **config))
        out[name] = [decoder.step() for _ in range(n)]
    return out


def expected_answer(trace, question) -> str | float:
    """The oracle: what the round's numbers say, read from other fields than the key reads."""
    if question.kind == "depth":
        kept = [n for n in trace.tree.nodes if n.depth == 0 and n.status == "accepted"]
        return f"node{kept[0].id}" if kept else "none"
    if question.kind == "source":
        if trace.greedy:
            return "argmax"
        if trace.n_accepted == (trace.gamma if trace.tree else len(trace.positions)):
            return "bonus"
        return "mentored" if trace.kl_budget > 0 else "residual"
    if question.kind == "yield":
        return float(trace.n_accepted + 1)
    pos = trace.positions[question.position]
    chance = (float(pos.candidates[0].id == pos.draft_token) if trace.greedy else pos.accept_prob if trace.kl_budget
              else min(1.0, pos.target_prob / pos.draft_prob))
    if question.kind == "kept":
        return "kept" if pos.uniform < chance else "rejected"
    return chance


def test_the_key_on_real_rounds_of_every_rule(rounds):
    """T = 0 (chances 1 or 0, the argmax as the correction), a KL budget (mentored s), prompt lookup (the chance is
    p(x)), two and three drafts (the candidate kept at depth 1; at T = 0 the argmax), each round's every question."""
    kinds = set()
    for name, traces in rounds.items():
        for trace in traces:
            for q in answer_key.questions(trace):
                kinds.add((name, q.kind))
                want, got = expected_answer(trace, q), q.answer
                if isinstance(want, float):
                    assert (got.value if got.value is not None else float(got.key == "one")) == pytest.approx(want, abs=1e-6)
                else:
                    assert got.key == want, (name, trace.step, q)
    assert {("greedy", "chance"), ("mentored", "kept"), ("lookup", "chance"), ("tree", "depth"),
            ("greedy-tree", "source")} <= kinds
    lookup = [t for t in rounds["lookup"] if t.positions]
    assert lookup and all(p.draft_prob == 1.0 for t in lookup for p in t.positions), "a copied draft: q is one-hot"


def exact_round(rounds):
    """A round of the exact rule with a rejection (a chance, a verdict and the residual to ask about)."""
    return next(t for t in rounds["exact"] if t.correction.kind == "resampled" and t.n_accepted >= 1)


def test_a_round_is_asked_before_it_is_shown(rounds):
    trace = exact_round(rounds)
    predict = Predict()
    predict.switch(True)
    hidden = predict.shown("run", trace)
    card = render.step_card(trace, hidden=hidden)
    verdicts = re.findall(r'<td([^>]*)><b style="[^"]*">[✓✗]', card)               # the verdict cells
    tests = re.findall(r'<td([^>]*)><span class="track"', card)                      # u against the chance
    assert verdicts and tests and all("sv-hidden" in cell for cell in verdicts + tests), "no decision before its answer"
    assert "end" in hidden and "correct" in hidden and "draft" not in hidden
    assert predict.current.kind == "yield" and predict.open


def test_answers_move_the_score_by_one_question_and_one_right_answer(rounds):
    trace = exact_round(rounds)
    predict = Predict()
    predict.switch(True)
    predict.shown("run", trace)
    assert predict.act("0", 0) and predict.state == "placed"             # the yield: a bet, nothing scored yet
    assert predict.asked == 0 and predict.act("next", 0) and predict.current.kind == "chance"
    chance = predict.current
    hidden_before = predict.hidden()
    assert predict.act(str(chance.right), predict.at)
    assert (predict.right, predict.asked, predict.state) == (1, 1, "answered")
    assert f"row{chance.position}.ratio" in hidden_before - predict.hidden(), "the answer shows the decision"
    assert 'data-result="right"' in question_html(predict)
    predict.act("next", predict.at)
    kept = predict.current
    wrong = 1 - kept.right
    assert predict.act(str(wrong), predict.at)
    assert (predict.right, predict.asked) == (1, 2) and 'data-result="wrong"' in question_html(predict)


def test_step_shows_a_decision_unscored_and_a_stale_click_changes_nothing(rounds):
    trace = exact_round(rounds)
    predict = Predict()
    predict.switch(True)
    predict.shown("run", trace)
    predict.advance()                                          # Step on the yield: no bet
    at = predict.at
    assert not predict.act("0", at - 1) and not predict.act("7", at) and not predict.act(None, at)
    predict.advance()                                          # Step on the chance: shown, not scored
    assert predict.state == "shown" and (predict.right, predict.asked) == (0, 0)
    assert "data-result" not in question_html(predict)
    while predict.open:
        predict.advance()
    assert predict.done and predict.hidden() == frozenset() and (predict.right, predict.asked) == (0, 0)


def test_a_bet_placed_stays_on_its_question_until_step_and_shows_no_answer(rounds):
    """Answer, then s: the yield's bet waits for Step like every other answer (it moved on by itself, and a student's
    next s showed the following question unanswered), marking the choice placed, never the right one."""
    predict = Predict()
    predict.switch(True)
    predict.shown("run", exact_round(rounds))
    bet = predict.current
    wrong = (bet.right + 1) % len(bet.choices)
    assert predict.act(str(wrong), 0) and predict.at == 0 and predict.open
    panel = question_html(predict)
    assert 'data-state="placed"' in panel and 'class="q-bet"' in panel and "q-why" not in panel
    assert f'q-choice chosen" data-choice="{wrong}"' in panel and "q-choice right" not in panel
    assert not predict.act(str(bet.right), 0)                              # one bet a round
    assert predict.act("next", 0) and predict.at == 1 and predict.state == "asking"


def test_the_yield_bet_is_settled_when_the_round_ends(rounds):
    trace = exact_round(rounds)
    predict = Predict()
    predict.switch(True)
    predict.shown("run", trace)
    bet = predict.current
    predict.act(str(bet.right), 0)
    assert predict.asked == 0
    while predict.open:
        predict.advance()
    assert (predict.right, predict.asked) == (1, 1)
    assert 'class="q-bet" data-result="right"' in question_html(predict)


def test_reset_or_a_new_run_starts_the_score_again(rounds):
    trace = exact_round(rounds)
    predict = Predict()
    predict.switch(True)
    predict.shown("run", trace)
    predict.act("0", 0)                                     # the bet, then on to the first chance
    predict.act("next", 0)
    predict.act(str(predict.current.right), predict.at)
    assert predict.right == 1
    predict.shown("another run", trace)
    assert (predict.right, predict.asked) == (0, 0)
    predict.shown("another run", trace)
    predict.act(str(predict.current.right), predict.at)
    predict.clear()
    assert (predict.right, predict.asked, predict.trace) == (0, 0, None)


def test_a_new_run_says_what_the_run_before_it_scored_until_its_own_first_answer(rounds):
    """The opening lesson, then a live Step: the score goes back to 0, and says why (a student saw "3 of 6" become
    "0 of 0" without a word)."""
    trace = exact_round(rounds)
    predict = Predict()
    predict.switch(True)
    predict.shown("lesson", trace)
    predict.act("0", 0)
    predict.act("next", 0)
    predict.act(str(predict.current.right), predict.at)
    predict.shown("live run", trace)
    assert "the last one scored 1 of 1" in score_html(predict, "en") and "0 of 0" in score_html(predict, "en")
    assert "上一次答对 1 / 1 题" in score_html(predict, "zh") and "前回は 1 問中 1 問正解" in score_html(predict, "ja")
    predict.act("next", 0)
    predict.act(str(predict.current.right), predict.at)
    assert "last one" not in score_html(predict, "en")
    predict.clear()                                          # Reset: nothing to say
    assert "last one" not in score_html(predict, "en")


def test_an_older_step_and_predict_off_show_everything(rounds):
    trace = exact_round(rounds)
    predict = Predict()
    assert predict.shown("run", trace) == frozenset()      # off
    predict.switch(True)
    assert predict.shown("run", trace, latest=False) == frozenset() and not predict.open
    assert render.step_card(trace) == render.step_card(trace, hidden=frozenset())


def test_the_opening_lesson_is_asked_without_a_model(page_settings):
    """A fresh tab in predict mode: the recorded round asks (a misconception first), Step moves through it and no
    run starts; off again, the opening is the page it was."""
    from specviz.app.handlers import step_handler

    plain = view_of(Session(), "leviathan")
    session = Session()
    session.predict.switch(True)
    view = view_of(session, "leviathan")
    assert session.predict.current.kind == "myth" and session.predict.current.topic == "argmax"
    assert 'class="sv-hidden" data-part="end"' in view.round_summary and "sv-hidden" in view.timeline
    assert 'class="sv-hidden" data-part="end"' in view.counters
    session, view = step_handler(session, page_settings(preset="shakespeare", prompt="ROMEO.\nBut soft, what light",
                                                        temperature=0.5, seed=DEFAULT_SEED))
    assert session.run is None and not session.stepped and session.predict.state == "shown"
    session.predict.switch(False)
    assert view_of(session, "leviathan") == plain


def test_lessons_carry_their_questions_and_unknown_ones_are_dropped():
    playback = Playback.of(first_lesson())
    assert playback.asks(1) == ("argmax",) and playback.asks(2) == ()
    assert lesson_questions({"1": ["wasted", "nope", 3], "x": ["argmax"], "2": "argmax"}) == ((1, ("wasted",)),)
    assert lesson_questions(["argmax"]) == ()
    assert myth_question("nope") is None


@pytest.mark.parametrize("name", LESSONS)
def test_each_lesson_file_carries_the_questions_its_recipe_asks(name):
    from specviz.tools.record import LESSON_RECIPES

    head = json.loads(lesson_path(name).read_text(encoding="utf-8").splitlines()[0])
    assert head.get("questions", {}) == LESSON_RECIPES[name].questions()
    assert all(myth_question(i) for ids in head.get("questions", {}).values() for i in ids)


def test_each_card_part_lights_a_line_of_its_rules_algorithm(rounds):
    html = algorithm_html()
    for traces in rounds.values():
        for trace in traces:
            rule = answer_key.mode(trace)
            card = render.step_card(trace)
            assert f'data-algo="{rule}"' in card
            block = re.search(rf'<ol class="algo" data-algo="{rule}"[^>]*>(.*?)</ol>', html).group(1)
            lines = set(re.findall(r'data-line="([a-z]+)"', block))
            assert lines == {line for line, _ in LINES[rule]}
            assert set(re.findall(r'data-line="([a-z]+)"', card)) <= lines


def test_each_misconception_has_one_right_answer_and_points_to_a_real_element():
    html = myths_html()
    ids = {i for path in APP.glob("*.py") for i in re.findall(r'elem_id\s*=\s*"([^"]+)"', path.read_text())}
    for myth in MYTHS:
        item = re.search(rf'<div class="myth" data-myth="{myth.id}">(.*?)</div></div>', html, re.S).group(1)
        assert item.count('data-right="1"') == 1 and item.count('class="myth-choice"') == myth.answers
        assert {myth.goto, *(x for x in [myth.press] if x), *(k for k, _ in myth.fill)} <= ids, myth


@pytest.mark.parametrize("lang, word", [("zh", "题"), ("ja", "問")])
def test_the_panel_speaks_the_pages_language(rounds, lang, word):
    predict = Predict()
    predict.switch(True)
    predict.shown("run", exact_round(rounds))
    html = panel_html(predict, lang)
    assert word in html and "right this run" not in html and "Question" not in html


def test_only_the_correction_lights_the_correction_lines(rounds):
    """The else (residual) and bonus lines of #algorithm say where the round's last token comes from, which predict
    mode asks after the tests: no part shown before the correction may light them (the 'not examined' row did)."""
    for traces in rounds.values():
        for trace in traces:
            card = render.step_card(trace)
            for tag in re.findall(r'<[^>]*data-line="(?:reject|bonus)"[^>]*>', card):
                assert 'data-part="correct"' in tag, tag
