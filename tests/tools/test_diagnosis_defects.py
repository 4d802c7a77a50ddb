"""The diagnosis names a planted defect: a draft with noisy weights, a draft at another temperature, a
greedy draft beside a sampling target, a broken head (acceptance length about 1), token ids that
mean other tokens (a tokenizer mismatch), NaN logits.

Two prompts, 40 new tokens, gamma 4, seed 0 each (two thirds of the calibration run below). The
thresholds the findings use (argmax agreement < 0.5, entropy ratio outside [0.6, 1.6]) sit far
from what each pair measured on three prompts of 40 tokens when the test was written (bundled:
agreement 0.82, ratio 0.99; noisy weights: agreement 0.20; draft at T 0.4: ratio 0.30, agreement
0.82; draft at T 2: ratio 1.83, agreement 0.72).
"""
from __future__ import annotations

import math
from dataclasses import replace

import pytest

from specviz.core import rejections
from specviz.core.config import DecodeConfig
from specviz.engine.decoding.decoders import SpeculativeDecoder
from specviz.engine.decoding.model_draft import ModelDraft
from specviz.engine.models.loading import load_pair
from specviz.present.diagnosis import diagnosis_text
from tests.defects import GreedyDraft, NaNDraft, PermutedDraft, ShiftedHeadDraft, TemperedDraft, noisy_draft

PROMPTS = ("ROMEO.\nBut soft", "KING.\nNow is the time")


def analysis_rows(pair, drafter=ModelDraft) -> list:
    rows = []
    for i, prompt in enumerate(PROMPTS):
        dec = SpeculativeDecoder(pair, prompt, DecodeConfig(gamma=4, max_new_tokens=40, seed=0), drafter=drafter)
        rows += rejections.tested_drafts(dec.run(), i)
    return rows


def analysis_of(pair, drafter=ModelDraft) -> dict:
    analysis = rejections.analyse(analysis_rows(pair, drafter))
    analysis["diagnosis"] = diagnosis_text(analysis, None, None, 1.0)
    return analysis


@pytest.fixture(scope="module")
def noisy_pair(tmp_path_factory):
    folder = noisy_draft(tmp_path_factory.mktemp("noisy") / "draft", scale=0.7, seed=0)
    return load_pair(draft=str(folder), target="assets/models/shakespeare-target", device="cpu")


def test_the_bundled_pair_has_no_defect(pair):
    a = analysis_of(pair)
    assert "No defect stands out" in a["diagnosis"]
    assert not (a["findings"]["disagrees"] or a["findings"]["temperature_mismatch"])


def test_noisy_weights_are_named_a_different_distribution(noisy_pair):
    a = analysis_of(noisy_pair)
    assert a["findings"]["acceptance_rate"] < 0.6
    assert "models a different distribution" in a["diagnosis"] and "Temperature mismatch" not in a["diagnosis"]


@pytest.mark.parametrize("draft_temperature,side", [(0.4, "lower temperature"), (2.0, "higher temperature")])
def test_a_draft_at_another_temperature_is_named_a_temperature_mismatch(pair, draft_temperature, side):
    decoder = type("Tempered", (TemperedDraft,), {"draft_temperature": draft_temperature})
    a = analysis_of(pair, decoder)
    assert "Temperature mismatch" in a["diagnosis"] and side in a["diagnosis"]
    assert "models a different distribution" not in a["diagnosis"]


def test_a_greedy_draft_beside_a_sampling_target_is_named(pair):
    a = analysis_of(pair, GreedyDraft)
    assert a["findings"]["greedy_draft"] and "Greedy draft" in a["diagnosis"]
    assert "Temperature mismatch" not in a["diagnosis"]


def test_a_broken_head_gives_acceptance_length_about_one(pair):
    a = analysis_of(pair, ShiftedHeadDraft)
    assert a["findings"]["acceptance_rate"] < 0.2 and "Acceptance length ≈ 1" in a["diagnosis"]


def test_token_ids_that_mean_other_tokens_are_named_a_tokenizer_mismatch(pair):
    a = analysis_of(pair, PermutedDraft)
    assert a["findings"]["ids_mismatch"] and "Tokenizer mismatch" in a["diagnosis"]


def test_nan_logits_are_refused_by_the_engine_and_named_in_a_foreign_run(pair):
    with pytest.raises(ValueError, match="NaN"):
        SpeculativeDecoder(pair, PROMPTS[0], DecodeConfig(gamma=4, max_new_tokens=8, seed=0), drafter=NaNDraft).run()
    # a run recorded by an engine without that check: p is NaN, and u < NaN is false, so nothing is accepted
    rows = [replace(r, target_prob=math.nan, accepted=False) for r in analysis_rows(pair)]
    analysis = rejections.analyse(rows)
    text = diagnosis_text(analysis, None, None, 1.0)
    assert analysis["findings"]["non_finite_probabilities"] == len(rows)
    assert "NaN logits" in text and "Every tested draft was rejected" in text


def test_the_bundled_pair_trips_no_misconfiguration(pair):
    f = analysis_of(pair)["findings"]
    assert not any(f[k] for k in ("greedy_draft", "not_drafting", "ids_mismatch", "all_or_nothing",
                                  "non_finite_probabilities"))
