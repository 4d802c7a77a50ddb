"""The card of a gamma auto round says where and why drafting stopped, and a hybrid round names the drafter it chose,
in English, Chinese and Japanese; the page's γ slider has an auto position an API client's integer gamma keeps."""
from __future__ import annotations

import dataclasses
import html
import re

import pytest

from specviz.core.config import DecodeConfig
from specviz.core.draft_length import DraftLengthRule, KeepTable
from specviz.core.notation import num, show
from specviz.engine.decoding.factory import make_decoder
from specviz.present import render
from specviz.present.page_settings import settings_from

CALIBRATED = KeepTable(tuple((i + 0.5) / 10 for i in range(10)))
RULE = DraftLengthRule(4, 0.1, (1.0, 1.05, 1.1, 1.15, 1.2), (("model", CALIBRATED), ("lookup", KeepTable((0.9,)))))
VERSE = "JULIET.\nO Romeo, Romeo, wherefore art thou Romeo?\nJULIET.\nO Romeo, Romeo"


def text(page: str) -> str:
    return html.unescape(re.sub(r"<[^>]+>", "", page))


def rounds(pair, prompt: str, drafter: str = "model", steps: int = 6):
    config = DecodeConfig(gamma=4, gamma_auto=True, draft_length=RULE, drafter=drafter, max_new_tokens=60, seed=1)
    dec = make_decoder(pair, prompt, config)
    return [dec.step() for _ in range(steps)]


def test_the_card_says_how_many_were_drafted_and_why_no_more(pair):
    traces = rounds(pair, "KING.\nNow is the time", steps=10)
    doubt = next(t for t in traces if t.draft_stop.reason == "doubt")
    stop, last = doubt.draft_stop, doubt.positions[-1]
    card = text(render.step_card(doubt))
    assert f"Drafted {stop.drafted} (γ auto)" in card
    assert f"the draft gave {show(last.draft_text)} {num(stop.confidences[-1])}" in card
    assert f"≈ {num(stop.survival)} < {num(stop.needed)}" in card
    assert f"γ = {doubt.gamma} (auto, at most 4)" in card
    for lang, words in (("zh", "γ 自动"), ("ja", "γ 自動")):
        said = text(render.step_card(doubt, lang=lang))
        assert words in said and f"{num(stop.survival)} < {num(stop.needed)}" in said
        assert "the draft gave" not in said
    fixed = make_decoder(pair, "KING", DecodeConfig(gamma=4, max_new_tokens=8)).step()
    assert "γ auto" not in text(render.step_card(fixed)) and "draft-stop" not in render.step_card(fixed)


def test_where_costs_alone_stop_drafting_the_card_does_not_blame_the_drafts_confidence(pair):
    """At costs where a second token cannot pay whatever its chance (tau_1 >= 1), the card used to say "kept with
    chance 0.59 < 1.01" beside the draft's 0.98, as if the confident token were why."""
    costly = DraftLengthRule(4, 0.5, (1.0, 1.05, 2.0, 3.0, 4.0), RULE.keep)
    dec = make_decoder(pair, "KING.\nNow is the time", DecodeConfig(gamma=4, gamma_auto=True, draft_length=costly,
                                                                     max_new_tokens=20, seed=1))
    trace = dec.step()
    stop = trace.draft_stop
    assert (stop.drafted, stop.reason) == (1, "doubt") and stop.needed >= 1
    card = text(render.step_card(trace))
    assert "does not pay even if the tokens drafted so far were sure to be kept" in card
    assert f"a chance of {num(stop.needed)}, above 1" in card and "the draft gave" not in card
    assert "超过 1" in text(render.step_card(trace, lang="zh")) and "1 を超えます" in text(render.step_card(trace, lang="ja"))


def test_one_drafted_token_reads_in_the_singular_and_the_chinese_cap_in_full_width_brackets(pair):
    traces = rounds(pair, "KING.\nNow is the time", steps=10)
    one = next(t for t in traces if t.draft_stop.reason == "doubt" and t.draft_stop.drafted == 1)
    card = text(render.step_card(one))
    assert "so it is kept with chance ≈" in card and "all 1" not in card
    zh = text(render.step_card(one, lang="zh"))
    assert "（自动，最多 4）" in zh and "1 个全部" not in zh


def test_a_round_that_reached_the_cap_says_so(pair):
    capped = dataclasses.replace(RULE, keep=(("model", KeepTable((1.0,))),))
    dec = make_decoder(pair, "KING", DecodeConfig(gamma=4, gamma_auto=True, draft_length=capped, max_new_tokens=20))
    trace = dec.step()
    assert trace.draft_stop.reason == "cap"
    assert "Drafted 4, the most γ auto drafts (4)" in text(render.step_card(trace))


def test_a_hybrid_round_names_the_drafter_it_chose(pair):
    traces = rounds(pair, VERSE, drafter="auto", steps=8)
    chosen = {t.source.details["chose"] for t in traces}
    assert chosen == {"lookup", "model"}, chosen
    for trace in traces:
        card = text(render.step_card(trace))
        if trace.source.details["chose"] == "lookup":
            assert "auto chose prompt lookup" in card and "prompt lookup" in card
            assert "自动选择了提示查找" in text(render.step_card(trace, lang="zh"))
        else:
            assert "auto chose the draft model" in card and "the draft model sampled" in card
            assert "自動でドラフトモデルを選択" in text(render.step_card(trace, lang="ja"))
        assert "auto chose" in render.narration(trace)


@pytest.mark.parametrize("sent, auto, gamma", [(0, True, 8), ("auto", True, 8), (4, False, 4), (4.0, False, 4)])
def test_the_sliders_auto_position_and_an_api_clients_integer_gamma(page_settings, sent, auto, gamma):
    config = settings_from(page_settings(gamma=sent)).config
    assert (config.gamma_auto, config.gamma) == (auto, gamma)


def test_a_gamma_that_is_neither_a_number_nor_auto_is_refused_by_name(page_settings):
    with pytest.raises(ValueError, match="gamma must be a whole number in 1..16 or auto, not 'soon'"):
        settings_from(page_settings(gamma="soon"))
