"""gamma auto on the bundled pair: the draft length adapts and the output law stays the target's.

The rule (core.draft_length) decides after each drafted token whether to draft another, from the draft's side only;
the token itself is always proposed. So the first two emitted tokens follow the target's law, greedy decoding equals
the target's, and a rule that drops the token it drew (after reading the target's p of it, or its own q of it) does
not: the planted drafters below show the chi-square catching such a rule.
"""
from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest
import torch

from specviz.core.config import DecodeConfig
from specviz.core.draft_length import DraftLengthRule, KeepTable
from specviz.core.metrics import metric_set
from specviz.core.trace import StepTrace
from specviz.engine.decoding.decoders import SpeculativeDecoder
from specviz.engine.decoding.factory import make_decoder
from specviz.engine.decoding.model_draft import ModelDraft
from tests.engine import first_token
from tests.engine.first_token import two_token_law
from tests.engine.greedy import greedy_parity
from tests.stats import chi_square_pvalue

CALIBRATED = KeepTable(tuple((i + 0.5) / 10 for i in range(10)))  # keep chance = the draft's confidence
# at these costs about half the first rounds on "KING" stop after one token and half draft on to three
RULE = DraftLengthRule(4, 0.1, (1.0, 1.05, 1.1, 1.15, 1.2), (("model", CALIBRATED), ("lookup", CALIBRATED)))
AUTO = DecodeConfig(gamma=4, gamma_auto=True, draft_length=RULE)


def seeded(config: DecodeConfig, seed: int) -> DecodeConfig:
    return dataclasses.replace(config, seed=seed)


@pytest.mark.slow  # hundreds of decoders end to end per case
@pytest.mark.parametrize("warping", [{}, {"top_k": 20, "temperature": 0.8}])
def test_the_first_two_tokens_follow_the_warped_target_under_auto(pair, warping):
    """The plumbing: RUNS = 400 seeded runs per case, the joint law of the first two emitted tokens against the
    target's, p(x1) p(x2 | x1) from plain forward passes; chi-square p > 1e-3 (bins of >= 5% mass; catches w >= 0.33
    with power 0.9). The rule stops after the first token in about half the first rounds, so the second token is a
    bonus from p in some runs and a verified draft in others: both paths are in the law tested. The law of rounds
    whose length the rule chooses is tests/core/test_draft_length.py's (200,000 samples in bulk, w >= 0.015); that
    one checks the decision code, not the drafters: how the model and lookup drafters stop (`Stopper`) and hand their
    rounds on is checked by this module's runs alone."""
    prompt, vocab = "KING", pair.vocab_size
    config = dataclasses.replace(AUTO, max_new_tokens=2, record=False, **warping)
    counts, lengths = np.zeros(vocab * vocab), set()
    for seed in range(first_token.RUNS):
        dec = make_decoder(pair, prompt, seeded(config, seed))
        while len(dec.generated_ids) < 2:
            dec.step()
        lengths.add(dec.records[0].gamma)
        counts[dec.generated_ids[0] * vocab + dec.generated_ids[1]] += 1
    assert 1 in lengths and max(lengths) > 1, lengths  # both kinds of first round were drawn
    assert chi_square_pvalue(counts, two_token_law(pair, prompt, config).numpy()) > 1e-3


PLANTED_RUNS = 600  # over the 8 bins of "KING"'s first-token law, p < 1e-6 catches w >= 0.29 with power 0.9


def first_token_counts(pair, prompt: str, config: DecodeConfig, drafter=None, runs: int = PLANTED_RUNS) -> np.ndarray:
    counts = np.zeros(pair.vocab_size)
    for seed in range(runs):
        dec = SpeculativeDecoder(pair, prompt, seeded(config, seed), drafter=drafter) if drafter else \
            make_decoder(pair, prompt, seeded(config, seed))
        dec.step()
        counts[dec.generated_ids[0]] += 1
    return counts


def first_token_law(pair, prompt: str, config: DecodeConfig) -> np.ndarray:
    with torch.inference_mode():
        logits = pair.target(torch.tensor([pair.encode(prompt)], device=pair.device)).logits[0, -1, : pair.vocab_size]
    return config.warp(logits).double().cpu().numpy()


def test_the_first_token_follows_the_target_under_auto(pair):
    """RUNS = 400 seeded one-round runs of gamma auto (the plumbing: the rule's rounds end to end): the first emitted
    token against the target's law, p > 1e-3 (catches w >= 0.33 over 20 bins with power 0.9; the law of rounds whose
    length the rule chooses is tests/core/test_draft_length.py's, 200,000 samples in bulk)."""
    config = dataclasses.replace(AUTO, max_new_tokens=1, record=False)
    counts = first_token_counts(pair, "KING", config, runs=first_token.RUNS)
    assert chi_square_pvalue(counts, first_token_law(pair, "KING", config)) > 1e-3


class PeekingDraft(ModelDraft):
    """PLANTED: a stopping rule that reads the target's p. It drafts as gamma auto does, then keeps its tokens only up
    to the first one the target gives less than the draft did (p(x) < q(x): the likely rejection), dropping it."""

    def propose(self, context, gamma):
        drafted = super().propose(context, gamma)
        ids = torch.tensor([context.ids + drafted.tokens.tolist()], device=self.pair.device)
        with torch.inference_mode():
            p = self.config.warp(self.pair.target(ids).logits[0, len(context.ids) - 1: -1, : self.pair.vocab_size])
        rows = torch.arange(drafted.gamma)
        p_x, q_x = p[rows, drafted.tokens], drafted.probs[rows, drafted.tokens]
        keep = int(torch.cumprod((p_x >= q_x).long(), 0).sum())
        return dataclasses.replace(drafted, tokens=drafted.tokens[:keep], probs=drafted.probs[:keep])


class DroppingDraft(ModelDraft):
    """PLANTED: the draft's side only, but it drops a token it drew when its own q of it is below 0.3 (llama.cpp's
    p_min as a sampling drafter might copy it): the proposed token is then conditioned on its own value."""

    def propose(self, context, gamma):
        drafted = super().propose(context, gamma)
        rows = torch.arange(drafted.gamma)
        keep = int(torch.cumprod((drafted.probs[rows, drafted.tokens] >= 0.3).long(), 0).sum())
        return dataclasses.replace(drafted, tokens=drafted.tokens[:keep], probs=drafted.probs[:keep])


@pytest.mark.slow
@pytest.mark.parametrize("planted", [PeekingDraft, DroppingDraft])
def test_a_rule_that_drops_the_token_it_drew_fails_the_chi_square(pair, planted):
    """PLANTED_RUNS = 600 runs of the first-token test above with a planted drafter: its first token's law is not the
    target's, p < 1e-6 (each planted rule moved the law by w = 0.35-0.36 in 1,000 runs, when this was written: at 600
    runs p < 1e-6 catches w = 0.35 with power 0.995).
    (Stopping *after* a token, from anything, leaves the next position's law p: a bonus token and a verified draft
    both follow p. Dropping the drawn token itself, on a test of its own value, is what biases.)"""
    config = dataclasses.replace(AUTO, max_new_tokens=1, record=False)
    counts = first_token_counts(pair, "KING", config, drafter=planted)
    assert chi_square_pvalue(counts, first_token_law(pair, "KING", config)) < 1e-6


@pytest.mark.parametrize("drafter", ["model", "lookup", "auto"])
def test_greedy_auto_equals_the_target_alone(pair, drafter):
    config = DecodeConfig(gamma=4, gamma_auto=True, draft_length=RULE, temperature=0, max_new_tokens=40,
                          drafter=drafter)
    spec = greedy_parity(pair, "JULIET.\nO Romeo, Romeo, wherefore art thou Romeo?\nJULIET.\nO Romeo", config)
    assert all(1 <= r.gamma <= 4 for r in spec.records if r.gamma)


def test_each_round_says_how_many_it_drafted_and_why_and_old_traces_still_load(pair):
    dec = make_decoder(pair, "KING.\nNow is the time", dataclasses.replace(AUTO, max_new_tokens=60, seed=3))
    traces = [dec.step() for _ in range(8)]
    for trace in traces:
        stop = trace.draft_stop
        assert stop.drafted == len(trace.positions) == trace.gamma == len(stop.confidences) == len(stop.keep)
        assert stop.reason in ("doubt", "cap") and stop.gamma_max == 4
        assert (stop.reason == "cap") == (stop.drafted == 4)
        if stop.reason == "doubt":
            assert stop.survival <= stop.needed
        assert stop.keep == [CALIBRATED.chance(s) for s in stop.confidences]
        # the confidence is q of the drawn token (T = 1)
        assert stop.confidences == pytest.approx([p.draft_prob for p in trace.positions], abs=1e-5)
        again = StepTrace.from_dict(json.loads(trace.to_json()))
        assert again.draft_stop == stop and trace.record.auto and again.record == trace.record
    assert dec.records == [t.record for t in traces] and metric_set(dec.records)["gamma_auto"]
    before_auto = traces[0].to_dict()                     # a trace written before records said "auto"
    before_auto["record"].pop("auto")
    assert StepTrace.from_dict(before_auto).record.auto
    old = traces[0].to_dict()
    old.pop("draft_stop")
    old["record"].pop("auto")
    assert StepTrace.from_dict(old).draft_stop is None and not StepTrace.from_dict(old).record.auto
    fixed = make_decoder(pair, "KING", DecodeConfig(gamma=4, max_new_tokens=8)).step()
    assert fixed.draft_stop is None and "draft_stop" not in fixed.to_dict() and "auto" not in fixed.to_dict()["record"]
    assert not fixed.record.auto


def test_at_temperature_zero_the_confidence_is_the_drafts_top_1(pair):
    config = DecodeConfig(gamma=4, gamma_auto=True, draft_length=RULE, temperature=0, max_new_tokens=20)
    dec = make_decoder(pair, "KING.\nNow is the time", config)
    trace = dec.step()
    ids = dec.prompt_ids
    with torch.inference_mode():
        logits = pair.draft(torch.tensor([ids], device=pair.device)).logits[0, -1, : pair.vocab_size]
    assert trace.draft_stop.confidences[0] == pytest.approx(float(torch.softmax(logits.double(), -1).max()), abs=1e-4)


def test_a_decoder_refuses_gamma_auto_without_its_rule(pair):
    with pytest.raises(ValueError, match="auto_gamma.resolve"):
        make_decoder(pair, "KING", DecodeConfig(gamma=8, gamma_auto=True))
