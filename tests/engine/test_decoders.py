"""specviz.engine.decoding.decoders on the bundled pair: exactness end to end, greedy parity, caches, counters."""
from __future__ import annotations

import json

import pytest
import torch

from specviz.core import theory
from specviz.core.config import DecodeConfig
from specviz.core.metrics import metric_set
from specviz.core.trace import StepTrace
from specviz.engine.decoding.decoders import DecodingFinished, SpeculativeDecoder
from tests.engine.first_token import bulk_first_token_pvalue, first_token_pvalue
from tests.engine.greedy import greedy_parity

PROMPTS = ["ROMEO.\nBut soft, what light", "KING.\nNow is the time", "HAMLET.\nTo be, or not"]


@pytest.mark.parametrize("gamma", [1, 3, 6])
def test_greedy_speculative_equals_target_only_and_hf_generate(pair, gamma):
    for prompt in PROMPTS:
        greedy_parity(pair, prompt, DecodeConfig(gamma=gamma, temperature=0, max_new_tokens=24))


WARPINGS = [{}, {"top_k": 20}, {"top_p": 0.8, "temperature": 0.8}]
# end to end, the plain warping in the fast tier; the truncating ones are slow (their law: the bulk test, every tier)
END_TO_END = [WARPINGS[0], *(pytest.param(w, marks=pytest.mark.slow) for w in WARPINGS[1:])]


@pytest.mark.parametrize("warping", END_TO_END)
def test_first_sampled_token_follows_the_warped_target(pair, warping):
    """The plumbing: RUNS = 400 seeded one-step decoder runs (gamma = 2) per warping; chi-square p > 1e-3 against the
    target's warped next-token distribution, computed by a plain forward pass (power: tests/engine/first_token.py)."""
    prompt = "KING"  # one token: nothing to prefill, so each run costs three small forwards
    config = DecodeConfig(gamma=2, max_new_tokens=1, record=False, **warping)
    assert first_token_pvalue(pair, prompt, config) > 1e-3


@pytest.mark.parametrize("warping", WARPINGS)
def test_the_round_on_the_pairs_own_rows_emits_the_warped_target(pair, warping):
    """The law: 10,000 rounds of the decision code on the pair's warped rows at "KING" (float32, 4,096 tokens, the
    warping's zeros); chi-square p > 1e-3 against p from a plain forward (power: tests/engine/first_token.py)."""
    config = DecodeConfig(gamma=2, max_new_tokens=1, record=False, **warping)
    assert bulk_first_token_pvalue(pair, "KING", config) > 1e-3


def test_cached_logits_after_rejections_equal_a_fresh_forward(pair):
    dec = SpeculativeDecoder(pair, PROMPTS[0], DecodeConfig(gamma=5, max_new_tokens=120, seed=3))
    rejections = 0
    for _ in range(12):
        trace = dec.step()
        rejections += trace.n_accepted < 5
    assert rejections > 0
    with torch.inference_mode():
        fresh = pair.target(torch.tensor([dec.tokens], device=pair.device)).logits[0, -1, : pair.vocab_size]
        fresh_draft = pair.draft(torch.tensor([dec.tokens], device=pair.device)).logits[0, -1, : pair.vocab_size]
    assert dec.target.seen == len(dec.tokens) - 1
    cached = dec.target.forward(dec.tokens[dec.target.seen:])[-1]
    cached_draft = dec.drafter.model.forward(dec.tokens[dec.drafter.model.seen:])[-1]
    tol = 1e-4 if pair.dtype == torch.float32 else 5e-2  # half precision: a cached and a fresh pass round differently
    assert torch.allclose(cached.float(), fresh.float(), atol=tol)
    assert torch.allclose(cached_draft.float(), fresh_draft.float(), atol=tol)


def test_same_seed_same_trace_whatever_runs_in_between(pair):
    config = DecodeConfig(gamma=4, max_new_tokens=30, seed=42)
    a = SpeculativeDecoder(pair, PROMPTS[1], config)
    b = SpeculativeDecoder(pair, PROMPTS[1], config)
    other = SpeculativeDecoder(pair, PROMPTS[2], DecodeConfig(seed=7))
    torch.rand(100)  # the global RNG is not ours
    for _ in range(5):
        ta = a.step()
        other.step()
        tb = b.step()
        assert [p.uniform for p in ta.positions] == [p.uniform for p in tb.positions]
    assert a.generated_ids == b.generated_ids


@pytest.mark.slow  # a long statistical test: 1,200 tokens decoded
def test_tokens_per_target_call_agree_with_theory(pair):
    """About 300 steps at gamma = 4 (6 seeded runs of 200 tokens): tokens per target call is within
    10% of (1 - a^5) / (1 - a) for the pooled acceptance rate a (the formula assumes i.i.d.
    acceptances, hence the slack)."""
    tokens = calls = accepted = examined = 0
    for seed in range(6):
        dec = SpeculativeDecoder(pair, PROMPTS[seed % 3], DecodeConfig(gamma=4, max_new_tokens=200, seed=seed, record=False))
        dec.run()
        c = dec.counters
        tokens, calls, accepted, examined = tokens + c.tokens, calls + c.target_calls, accepted + c.accepted, examined + c.examined
    predicted = theory.expected_tokens_per_target_call(accepted / examined, 4)
    assert tokens / calls == pytest.approx(predicted, rel=0.10)


def test_mentored_decoding_raises_acceptance_on_the_bundled_pair(pair):
    rates = []
    for budget in (0.0, 0.5):
        dec = SpeculativeDecoder(pair, PROMPTS[0], DecodeConfig(gamma=4, kl_budget=budget, max_new_tokens=150, seed=5))
        dec.run()
        rates.append(metric_set(dec.records)["acceptance_rate"])
    assert rates[1] > rates[0]


def test_trace_records_every_step_of_the_algorithm(pair):
    dec = SpeculativeDecoder(pair, PROMPTS[0], DecodeConfig(gamma=4, max_new_tokens=60, seed=0))
    for _ in range(5):
        trace = dec.step()
        assert len(trace.positions) == 4
        examined = [p for p in trace.positions if p.uniform is not None]
        assert len(examined) == min(trace.n_accepted + 1, 4)
        assert [p.verdict for p in examined] == ["accepted"] * trace.n_accepted + ["rejected"] * (len(examined) - trace.n_accepted)
        assert trace.correction.kind == ("bonus" if trace.n_accepted == 4 else "resampled")
        assert abs(sum(c.final_prob for c in trace.correction.candidates) + trace.correction.final_other - 1) < 1e-4
        for p in trace.positions:
            assert any(c.id == p.draft_token for c in p.candidates)
            assert abs(p.overlap - (1 - p.tv)) < 1e-5
        assert trace.counters.target_calls == trace.step
        assert StepTrace.from_dict(json.loads(trace.to_json())) == trace  # the JSON holds the whole trace


def test_stops_at_max_new_tokens_and_refuses_further_steps(pair):
    dec = SpeculativeDecoder(pair, PROMPTS[0], DecodeConfig(gamma=4, max_new_tokens=7, seed=0))
    dec.run()
    assert len(dec.generated_ids) == 7 and dec.finished
    with pytest.raises(DecodingFinished):
        dec.step()


def test_long_prompt_is_truncated_from_the_left_with_a_notice(pair):
    dec = SpeculativeDecoder(pair, "To be or not to be. " * 200, DecodeConfig(gamma=4, max_new_tokens=20))
    assert len(dec.prompt_ids) == pair.context_window - 20 - 4 - 1
    assert "truncated" in dec.notice
    assert len(dec.step().positions) == 4


@pytest.mark.parametrize("prompt, kwargs, message", [
    ("", {}, "empty"), ("   \n", {}, "empty"), ("x" * 20_001, {}, "characters"),
    ("hi", {"gamma": 0}, "gamma"), ("hi", {"gamma": 17}, "gamma"), ("hi", {"temperature": -1.0}, "temperature"),
    ("hi", {"top_p": 0.0}, "top_p"), ("hi", {"kl_budget": -0.1}, "kl_budget"), ("hi", {"max_new_tokens": 0}, "max_new_tokens"),
    ("hi", {"max_new_tokens": 4000}, "context window"),
])
def test_bad_input_gives_a_clear_error(pair, prompt, kwargs, message):
    with pytest.raises(ValueError, match=message):
        SpeculativeDecoder(pair, prompt, DecodeConfig(**kwargs))


def test_odd_unicode_prompts_decode(pair):
    for prompt in ["💡 naïve café — ß", "\ud800 lone surrogate", "\x00\x01 control", "日本語のテキスト"]:
        dec = SpeculativeDecoder(pair, prompt, DecodeConfig(max_new_tokens=5))
        dec.run()
        assert len(dec.generated_ids) >= 1


def test_a_decoder_resumed_from_its_plain_state_continues_the_same_run(pair):
    """state() -> resume= rebuilds the KV caches from token ids and the generator from its bytes."""
    config = DecodeConfig(gamma=4, max_new_tokens=40, seed=11)
    live = SpeculativeDecoder(pair, PROMPTS[2], config)
    hopping = SpeculativeDecoder(pair, PROMPTS[2], config)
    exact_arithmetic = pair.dtype == torch.float32
    for _ in range(5):
        a = live.step()
        hopping = SpeculativeDecoder(pair, PROMPTS[2], config, resume=hopping.state())
        b = hopping.step()
        if exact_arithmetic:
            assert [p.uniform for p in a.positions] == [p.uniform for p in b.positions]
        else:  # half precision: a cache rebuilt in one pass rounds differently, so a near-tie may
            # branch differently; the generator stream (a fixed number of draws per step) still carries over
            both = [(x.uniform, y.uniform) for x, y in zip(a.positions, b.positions) if None not in (x.uniform, y.uniform)]
            assert both and all(x == y for x, y in both)
    if exact_arithmetic:
        assert live.tokens == hopping.tokens and live.counters.tokens == hopping.counters.tokens
