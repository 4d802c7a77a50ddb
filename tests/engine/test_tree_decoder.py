"""specviz.engine.decoding.tree_decoder on the bundled pair: several drafts at once, exact end to end."""
from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from specviz.core.config import DecodeConfig
from specviz.core.trace import StepTrace
from specviz.engine.decoding.decoders import SpeculativeDecoder
from specviz.engine.decoding.factory import decoder_class, make_decoder
from specviz.engine.decoding.tree_decoder import TreeDecoder
from tests.engine import first_token
from tests.engine.first_token import two_token_law
from tests.engine.greedy import greedy_parity
from tests.stats import chi_square_pvalue

PROMPT = "KING.\nNow is the time"


@pytest.mark.parametrize("drafts", range(1, 9))
def test_greedy_tree_equals_target_only(pair, drafts):
    spec = greedy_parity(pair, PROMPT, DecodeConfig(gamma=3, temperature=0, max_new_tokens=20, drafts=drafts))
    assert isinstance(spec, TreeDecoder) == (drafts > 1)


def test_the_factory_picks_the_decoder_and_a_chain_refuses_what_it_would_not_honour(pair):
    assert decoder_class(DecodeConfig()) is SpeculativeDecoder
    assert decoder_class(DecodeConfig(drafts=3)) is TreeDecoder
    assert decoder_class(DecodeConfig(drafter="lookup")) is SpeculativeDecoder
    with pytest.raises(ValueError, match="make_decoder"):
        SpeculativeDecoder(pair, PROMPT, DecodeConfig(drafts=2))
    with pytest.raises(ValueError, match="drafter lookup"):
        decoder_class(DecodeConfig(drafter="lookup", drafts=2))


@pytest.mark.slow  # hundreds of tree decoders end to end
@pytest.mark.parametrize("drafts,warping", [(2, {"top_k": 20}), (4, {"top_p": 0.8, "temperature": 0.8})])
def test_first_two_tokens_follow_the_warped_target(pair, drafts, warping):
    """The plumbing: RUNS = 400 seeded runs (gamma = 2) per case: the joint law of the first two emitted tokens
    against the target's, p(x1) p(x2 | x1) from plain forward passes; chi-square p > 1e-3 (bins of >= 5% mass;
    catches w >= 0.33 with power 0.9). The tree rule's own two-token law is tests/core/test_tree.py's (known laws,
    8,000 samples), its first-token law exact by enumeration there; the caches after a tree round: below."""
    prompt = "KING"  # one token: nothing to prefill
    config = DecodeConfig(gamma=2, max_new_tokens=2, record=False, drafts=drafts, **warping)
    vocab = pair.vocab_size
    expected = two_token_law(pair, prompt, config)
    counts = np.zeros(vocab * vocab)
    for seed in range(first_token.RUNS):
        dec = make_decoder(pair, prompt, DecodeConfig(**{**config.__dict__, "seed": seed}))
        while len(dec.generated_ids) < 2:
            dec.step()
        counts[dec.generated_ids[0] * vocab + dec.generated_ids[1]] += 1
    assert chi_square_pvalue(counts, expected.numpy()) > 1e-3


def test_caches_keep_only_the_accepted_path(pair):
    dec = make_decoder(pair, PROMPT, DecodeConfig(gamma=4, drafts=3, max_new_tokens=120, seed=3))
    rejections = 0
    for _ in range(10):
        rejections += dec.step().n_accepted < 4
    assert rejections > 0
    with torch.inference_mode():
        fresh = pair.target(torch.tensor([dec.tokens], device=pair.device)).logits[0, -1, : pair.vocab_size]
        fresh_draft = pair.draft(torch.tensor([dec.tokens], device=pair.device)).logits[0, -1, : pair.vocab_size]
    assert dec.target.seen == len(dec.tokens) - 1 and dec.target.rows == dec.drafter.model.rows == 1
    cached = dec.target.forward(dec.tokens[dec.target.seen:])[-1]
    cached_draft = dec.drafter.model.forward(dec.tokens[dec.drafter.model.seen:])[-1]
    tol = 1e-4 if pair.dtype == torch.float32 else 5e-2
    assert torch.allclose(cached.float(), fresh.float(), atol=tol)
    assert torch.allclose(cached_draft.float(), fresh_draft.float(), atol=tol)


def test_tree_trace_tells_the_tries_and_survives_json(pair):
    dec = make_decoder(pair, PROMPT, DecodeConfig(gamma=3, drafts=4, max_new_tokens=60, seed=2))
    traces = [dec.step() for _ in range(6)]
    for t in traces:
        assert t.drafts == 4 and t.tree is not None
        assert [n.token for n in (t.tree.nodes[i] for i in t.tree.path)] == [e.id for e in t.emitted][: t.n_accepted]
        for depth in range(t.record.n_examined):
            tries = [x for x in t.tree.tries if x.depth == depth]
            assert [x.rank for x in tries] == list(range(len(tries)))
            assert all(x.verdict == "rejected" for x in tries[:-1])
            assert all(len(x.residual) > 0 for x in tries if x.verdict == "rejected")
        assert list(t.record.level_tries) == [sum(x.depth == d for x in t.tree.tries) for d in range(t.record.n_examined)]
        assert StepTrace.from_dict(json.loads(t.to_json())).to_json() == t.to_json()
    assert any(len(t.tree.tries) > t.record.n_examined for t in traces)  # some sibling was tried after a rejection


def test_single_draft_traces_keep_their_json(pair):
    trace = make_decoder(pair, PROMPT, DecodeConfig(gamma=2, max_new_tokens=8)).step()
    data = trace.to_dict()
    assert "tree" not in data and "drafts" not in data and "level_tries" not in data["record"]


def test_a_tree_decoder_resumes_from_its_plain_state(pair):
    config = DecodeConfig(gamma=3, drafts=3, max_new_tokens=40, seed=11)
    live = make_decoder(pair, PROMPT, config)
    hopping = make_decoder(pair, PROMPT, config)
    for _ in range(4):
        live.step()
        hopping = make_decoder(pair, PROMPT, config, resume=hopping.state())
        hopping.step()
    if pair.dtype == torch.float32:
        assert live.tokens == hopping.tokens
