"""The round told as it happens: the summary sentence, u defined on the card, digits that decide, mentored rows."""
from __future__ import annotations

import re

import pytest

from specviz.core.config import DecodeConfig
from specviz.core.notation import show
from specviz.engine.decoding.decoders import SpeculativeDecoder
from specviz.present import render
from specviz.present.page_settings import DEFAULT_SEED


@pytest.mark.parametrize("u, chance", [(0.997, 1.0), (0.9951, 0.9949), (0.0031, 0.0032), (0.5, 0.5), (0.12345, 0.12349),
                                       (0.8234, 0.78), (1e-7, 2e-7)])
def test_printed_digits_order_as_the_true_values(u, chance):
    a, b = render.decisive(u, chance)
    assert (float(a) < float(b)) == (u < chance)
    assert (float(a) == float(b)) == (u == chance)


def first_rounds(pair, temperature, kl_budget=0.0, steps=3, seed=DEFAULT_SEED):
    dec = SpeculativeDecoder(pair, "ROMEO.\nBut soft, what light",
                             DecodeConfig(gamma=4, temperature=temperature, seed=seed, kl_budget=kl_budget))
    return [dec.step() for _ in range(steps)]


def text(html: str) -> str:
    return re.sub(r"<[^>]+>", "", html)


def test_summary_counts_drafted_kept_and_tokens_per_pass(pair):
    for trace in first_rounds(pair, 0.5):
        sentence = text(render.round_summary(trace))
        assert f"drafted {trace.gamma}" in sentence
        n = len(trace.emitted)
        assert f"{n} {'token' if n == 1 else 'tokens'} from 1 target pass" in sentence
        assert ("bonus token" in sentence) == (trace.correction.kind == "bonus")
        assert ("from the residual" in sentence) == (trace.correction.kind == "resampled")


def test_a_round_cut_after_an_accepted_draft_says_where_the_output_stops(pair):
    """An accepted end of text (or the run's last token) cuts the round: its later verdicts and its correction are
    never output. The summary said "kept 2; resampled <|im_end|> from the residual: 1 token from 1 target pass"."""
    for seed in range(6):
        dec = SpeculativeDecoder(pair, "ROMEO.\nBut soft, what light", DecodeConfig(gamma=4, max_new_tokens=2, seed=seed))
        trace = dec.step()
        if trace.n_accepted >= 2:  # the budget of 2 ends the output at the second accepted draft
            break
    else:
        pytest.fail("6 seeds of this pair accept 2 drafts in a first round")
    sentence = text(render.round_summary(trace))
    assert f"the output stops at {show(trace.emitted[-1].text)}" in sentence and "2 tokens from 1 target pass" in sentence
    assert "residual" not in sentence and "bonus" not in sentence
    assert "输出在" in text(render.round_summary(trace, lang="zh"))


def test_greedy_summary_speaks_of_the_argmax(pair):
    traces = first_rounds(pair, 0.0, steps=4)
    resampled = [t for t in traces if t.correction.kind == "resampled"]
    assert resampled, "4 greedy rounds of this pair include a disagreement"
    assert "argmax" in text(render.round_summary(resampled[0]))


def test_card_defines_u_where_it_first_appears(pair):
    card = text(render.step_card(first_rounds(pair, 0.5, steps=1)[0]))
    assert card.index("u is a fresh uniform random number") < card.index("u = ")


def test_mentored_rows_say_where_exact_decoding_differs(pair):
    for trace in first_rounds(pair, 1.0, kl_budget=0.5, steps=6, seed=0):
        differs = [p for p in trace.positions if p.uniform is not None and
                   (p.uniform < p.exact_accept_prob) != (p.verdict == "accepted")]
        card = text(render.step_card(trace))
        assert card.count("exact decoding would have") == len(differs)
        if differs:
            assert "exact decoding would have decided otherwise" in text(render.round_summary(trace))


def test_summary_and_card_in_chinese_and_japanese(pair):
    trace = first_rounds(pair, 0.5, steps=1)[0]
    assert "起草" in render.round_summary(trace, lang="zh") and "接受" in render.step_card(trace, lang="zh")
    assert "ドラフト" in render.round_summary(trace, lang="ja") and "採用" in render.step_card(trace, lang="ja")
    assert "min(1, φ/θ)" in render.step_card(trace, "masada", lang="ja")


def test_the_card_says_what_a_draft_reading_the_targets_hidden_states_sees(pair):
    """Only a draft that reads the target's features gets the note, in the notation's letter and each language."""
    [trace] = first_rounds(pair, 1.0, steps=1)
    assert "draft-reads" not in render.step_card(trace)
    trace.source.details = {"reads_target": True}
    english = text(render.step_card(trace, "leviathan"))
    assert "hidden state" in english and "changes only q" in english
    assert "changes only p" in text(render.step_card(trace, "chen")) and "changes only θ" in text(render.step_card(trace, "masada"))
    assert "隐藏状态" in render.step_card(trace, lang="zh") and "隠れ状態" in render.step_card(trace, lang="ja")
