"""The hybrid drafter (`--drafter auto`) on the bundled pair: prompt lookup where the context has a match, the draft
model elsewhere, chosen per round from the context alone; exact like either."""
from __future__ import annotations

import numpy as np
import torch

from specviz.core.config import DecodeConfig
from specviz.core.draft_length import DraftLengthRule, KeepTable
from specviz.engine.decoding.drafters import HybridDraft, drafter_class
from specviz.engine.decoding.drafting import DeviceIds, TokenContext
from specviz.engine.decoding.factory import make_decoder
from tests.engine import first_token
from tests.stats import chi_square_pvalue

VERSE = "JULIET.\nO Romeo, Romeo, wherefore art thou Romeo?\nJULIET.\nO Romeo, Romeo"


def context_of(ids: list[int]) -> TokenContext:
    return TokenContext(ids=ids, n_prompt=len(ids), on_device=DeviceIds(ids, len(ids) + 8, torch.device("cpu")))


def hybrid(pair, config: DecodeConfig) -> HybridDraft:
    dec = make_decoder(pair, "KING", config)
    assert isinstance(dec.drafter, HybridDraft)
    return dec.drafter


def test_at_a_fixed_gamma_it_copies_after_a_match_of_three_tokens_and_drafts_elsewhere(pair):
    drafter = hybrid(pair, DecodeConfig(drafter="auto"))
    assert drafter.chooses_lookup(context_of([5, 6, 7, 9, 5, 6, 7]))       # the last three occurred earlier
    assert not drafter.chooses_lookup(context_of([5, 6, 7, 9, 4, 6, 7]))   # only two did
    assert not drafter.chooses_lookup(context_of([1, 2, 3, 4, 5, 6, 7]))


def test_with_gamma_auto_it_copies_where_a_copy_is_kept_at_least_as_often_as_a_draft(pair):
    """Keep tables planted: a copy after a one-token match is kept 0.2, after two 0.5, after three 0.9; the draft
    model's tokens 0.4 on average. So a two- or three-token match chooses the lookup, a one-token match the model."""
    lookup_table = KeepTable((0.2,) * 4 + (0.5,) * 3 + (0.9,) * 3)
    rule = DraftLengthRule(4, 0.1, (1.0, 1.1), (("model", KeepTable((0.4,), 100, 0.4)), ("lookup", lookup_table)))
    drafter = hybrid(pair, DecodeConfig(drafter="auto", gamma=4, gamma_auto=True, draft_length=rule))
    assert drafter.chooses_lookup(context_of([5, 6, 7, 9, 5, 6, 7]))
    assert drafter.chooses_lookup(context_of([5, 6, 7, 9, 4, 6, 7]))
    assert not drafter.chooses_lookup(context_of([5, 6, 8, 9, 4, 3, 7, 1, 7]))  # a match of one token only


def test_with_gamma_auto_the_text_s_own_copies_outweigh_the_table(pair):
    """Planted: a copy after a two-token match is kept 0.5 by the table (weighed as TABLE_WEIGHT = 2 copies), a
    draft 0.4. One copy rejected at its first token (the text went on with 8, not the copied 9): (2 · 0.5 + 0) / 3 =
    0.33 < 0.4, so the next two-token match drafts with the model; one kept: (2 · 0.5 + 1) / 3 = 0.67, it copies."""
    from specviz.engine.decoding import lookup_draft

    assert lookup_draft.TABLE_WEIGHT == 2
    lookup_table = KeepTable((0.2,) * 4 + (0.5,) * 3 + (0.9,) * 3)
    rule = DraftLengthRule(4, 0.1, (1.0, 1.1), (("model", KeepTable((0.4,), 100, 0.4)), ("lookup", lookup_table)))
    config = DecodeConfig(drafter="auto", gamma=4, gamma_auto=True, draft_length=rule)
    first = [5, 6, 7, 9, 4, 6, 7]  # "6 7" occurred before: the copy would be 9, at position 7
    for next_token, copies in ((8, False), (9, True)):
        dec = make_decoder(pair, "KING", config)
        drafter = dec.drafter
        assert drafter.propose(context_of(first), 4).detail["chose"] == "lookup"
        again = first + [next_token, 2, 6, 7]  # another two-token match ("6 7"; "2 6 7" never occurred)
        assert drafter.chooses_lookup(context_of(again)) is copies
        assert drafter.lookup.copies[("first", 2)] == (int(copies), 1)
        twin = dec.fork(1).drafter
        twin.lookup.copies[("first", 2)] = (0, 9)
        assert drafter.lookup.copies[("first", 2)] == (int(copies), 1)  # a fork (a race's other side) learns alone


def test_rounds_on_a_repeated_verse_copy_and_rounds_elsewhere_draft_and_the_trace_says_which(pair):
    dec = make_decoder(pair, VERSE, DecodeConfig(drafter="auto", gamma=4, max_new_tokens=40, seed=2))
    traces = [dec.step() for _ in range(6)]
    chosen = [t.source.details["chose"] for t in traces]
    assert traces[0].source.kind == "auto" and chosen[0] == "lookup"  # the verse's last tokens occurred earlier
    assert "model" in chosen, chosen
    for trace in traces:
        if trace.source.details["chose"] == "lookup":
            assert trace.source.details["details"]["ngram"] >= 3
        assert trace.gamma <= 4
    assert drafter_class(DecodeConfig(drafter="auto")) is HybridDraft


def test_the_first_token_follows_the_target_when_the_round_copies(pair):
    """RUNS = 400 seeded one-round runs on the repeated verse, forks of one prefilled decoder (the first round copies:
    q is a point mass): the first emitted token against the target's law, chi-square p > 1e-3 (bins of >= 5% mass;
    catches w >= 0.33 over 20 bins with power 0.9: the plumbing; a copied draft's law in bulk is tests/core's
    prompt lookup test, 200,000 rounds)."""
    config = DecodeConfig(drafter="auto", gamma=4, max_new_tokens=1, record=False, temperature=1.5)
    with torch.inference_mode():
        logits = pair.target(torch.tensor([pair.encode(VERSE)])).logits[0, -1, : pair.vocab_size]
    prefilled = make_decoder(pair, VERSE, config)
    counts = np.zeros(pair.vocab_size)
    for seed in range(first_token.RUNS):
        dec = prefilled.fork(seed)
        dec.step()
        counts[dec.generated_ids[0]] += 1
    assert chi_square_pvalue(counts, config.warp(logits).double().numpy()) > 1e-3
