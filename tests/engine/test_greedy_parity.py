"""The greedy parity helper can fail where it looks: decoders that both stop early, or a speculative side
that writes one wrong token, do not pass it."""
from __future__ import annotations

from dataclasses import replace

import pytest

from specviz.core.config import DecodeConfig
from tests.engine import greedy

PROMPT = "ROMEO.\nBut soft"


def test_the_bundled_pair_passes_greedy_parity_over_its_whole_length(pair):
    spec = greedy.greedy_parity(pair, PROMPT, DecodeConfig(gamma=4, temperature=0.0, max_new_tokens=24))
    assert len(spec.generated_ids) == 24 or spec.generated_ids[-1] == pair.tokenizer.eos_token_id


def test_decoders_that_both_stop_early_fail_greedy_parity(pair, monkeypatch):
    """A fault shared by both sides (here: both told half the tokens) is caught by the oracle's full length."""
    def halved(make):
        return lambda p, prompt, config: make(p, prompt, replace(config, max_new_tokens=config.max_new_tokens // 2))
    monkeypatch.setattr(greedy, "make_decoder", halved(greedy.make_decoder))
    monkeypatch.setattr(greedy, "TargetOnlyDecoder", halved(greedy.TargetOnlyDecoder))
    with pytest.raises(AssertionError):
        greedy.greedy_parity(pair, PROMPT, DecodeConfig(gamma=4, temperature=0.0, max_new_tokens=24))


def test_a_speculative_side_with_one_wrong_token_fails_greedy_parity(pair, monkeypatch):
    make = greedy.make_decoder

    def wrong_last(p, prompt, config):
        decoder = make(p, prompt, config)
        run = decoder.run

        def run_then_change():
            out = run()
            decoder.tokens[-1] = (decoder.tokens[-1] + 1) % p.vocab_size  # the last generated token
            return out
        decoder.run = run_then_change
        return decoder
    monkeypatch.setattr(greedy, "make_decoder", wrong_last)
    with pytest.raises(AssertionError):
        greedy.greedy_parity(pair, PROMPT, DecodeConfig(gamma=4, temperature=0.0, max_new_tokens=24))
