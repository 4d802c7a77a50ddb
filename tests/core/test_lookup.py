"""specviz.core.lookup: prompt lookup proposes what followed an earlier n-gram, and speculative sampling with
its one-hot q emits exactly the target's law (enumeration and a seeded chi-square on a 3-token vocabulary).

Statistical test: N = 20,000 seeded runs, chi-square p > 1e-3 over the 27 sequences of 3 tokens (bins merged
to >= 5% expected mass by tests/stats.py)."""
from __future__ import annotations

import itertools

import pytest
import torch

from specviz.core.config import DecodeConfig
from specviz.core.lookup import LookupProposal, one_hot_draft, propose
from specviz.core.sampling import accept_probability, residual_distribution
from tests import bulk
from tests.stats import chi_square_pvalue

N_SAMPLES = 20_000
P_MIN = 1e-3


# ----------------------------------------------------------------------------- what it proposes


def test_copies_what_followed_the_latest_earlier_occurrence_of_the_last_ngram():
    context = [7, 1, 2, 3, 4, 9, 1, 2, 5, 6, 1, 2]  # "1 2" at 1 and 6 (and at the end)
    assert propose(context, gamma=2, max_ngram=2) == LookupProposal(tokens=[5, 6], start=8, ngram=2)


def test_tries_the_longest_ngram_first():
    context = [1, 2, 3, 8, 5, 3, 9, 9, 2, 3]  # "2 3" matches at 1; "3" alone matches later, at 5
    assert propose(context, gamma=3, max_ngram=2) == LookupProposal(tokens=[8, 5, 3], start=3, ngram=2)
    assert propose(context, gamma=3, max_ngram=1) == LookupProposal(tokens=[9, 9, 2], start=6, ngram=1)


def test_a_match_near_the_end_proposes_only_the_tokens_that_exist():
    assert propose([4, 5, 4, 5], gamma=6, max_ngram=2) == LookupProposal(tokens=[4, 5], start=2, ngram=2)


def test_no_earlier_occurrence_proposes_nothing():
    assert propose([1, 2, 3, 4], gamma=4, max_ngram=3).tokens == []
    assert propose([1], gamma=4, max_ngram=3).tokens == []
    assert propose([1, 2, 3, 2], gamma=4, max_ngram=3, min_ngram=2).tokens == []  # only a 1-gram would match


def test_looking_in_the_prompt_only_ignores_matches_in_the_output():
    context = [1, 2, 3, 0, 1, 2, 6, 1, 2]  # prompt = the first 4 tokens
    assert propose(context, gamma=4, max_ngram=2).tokens == [6, 1, 2]
    assert propose(context, gamma=4, max_ngram=2, searchable=4) == LookupProposal(tokens=[3, 0], start=2, ngram=2)


def test_a_token_it_must_never_copy_is_passed_over_and_ends_a_copy():
    """A chat prompt's newline after <|im_end|> is followed by <|im_start|> (here 1 and 0): the answer's first
    newline matched it and the lookup proposed the template's control token. Passed over, the next match counts."""
    im_start, im_end, nl = 0, 1, 2
    context = [im_start, 5, nl, 7, 8, im_end, nl, im_start, 6, nl]  # ...user\n Q <|im_end|>\n<|im_start|>assistant\n
    assert propose(context, gamma=3, max_ngram=1).tokens == [im_start, 6, nl]  # what it did
    assert propose(context, gamma=3, max_ngram=1, never={im_start, im_end}) == LookupProposal(tokens=[7, 8], start=3,
                                                                                              ngram=1)
    assert propose([4, im_start, 4], gamma=2, max_ngram=1, never={im_start}).tokens == []


def test_q_is_one_hot_on_each_proposed_token():
    q = one_hot_draft([2, 0], 3, torch.zeros(1, dtype=torch.float64))
    assert torch.equal(q, torch.tensor([[0.0, 0.0, 1.0], [1.0, 0.0, 0.0]], dtype=torch.float64))
    assert one_hot_draft([], 3, torch.zeros(1)).shape == (0, 3)


@pytest.mark.parametrize("knobs, named", [
    ({"drafter": ""}, "drafter"), ({"drafter": 3}, "drafter"), ({"drafter": "lookup", "lookup_max_ngram": 0}, "lookup_max_ngram"),
    ({"lookup_min_ngram": 2.5}, "lookup_min_ngram"), ({"lookup_min_ngram": 4, "lookup_max_ngram": 3}, "lookup_min_ngram"),
    ({"lookup_source": "web"}, "lookup_source")])
def test_bad_lookup_settings_are_refused_by_name(knobs, named):
    with pytest.raises(ValueError, match=named):
        DecodeConfig(**knobs)


# ----------------------------------------------------------------------------- exactness

VOCAB, GAMMA, HORIZON, PROMPT = 3, 3, 4, (0, 1, 2, 0, 1)  # the prompt's "0 1" repeats: rounds copy from it


def target_tables(seed: int) -> dict:
    """A target law for every context after PROMPT (up to HORIZON + GAMMA more tokens), with a tie row, a
    one-hot row (p(x) = 1: nothing to reject) and rows with zeros (a proposal the target rules out)."""
    gen = torch.Generator().manual_seed(seed)
    special = [[0.4, 0.4, 0.2], [0.0, 1.0, 0.0], [0.5, 0.0, 0.5], [0.0, 0.3, 0.7]]
    tables = {}
    for n in range(HORIZON + GAMMA + 1):
        for i, suffix in enumerate(itertools.product(range(VOCAB), repeat=n)):
            row = torch.tensor(special[i % 4], dtype=torch.float64) if i % 3 == 0 else \
                torch.rand(VOCAB, generator=gen, dtype=torch.float64) + 0.05
            tables[suffix] = row / row.sum()
    return tables


def target_chain(tables: dict, seq: tuple) -> float:
    """The oracle: P(seq) under the target alone, the product of its conditionals."""
    prob = 1.0
    for i, x in enumerate(seq):
        prob *= float(tables[seq[:i]][x])
    return prob


def round_law(tables: dict, emitted: tuple) -> dict:
    """Exact law of what one lookup round emits after PROMPT + emitted: {tokens: probability}."""
    drafts = tuple(propose(PROMPT + emitted, GAMMA, max_ngram=2).tokens)
    if not drafts:  # nothing proposed: one token from p
        return {(x,): float(tables[emitted][x]) for x in range(VOCAB)}
    k = len(drafts)
    p = torch.stack([tables[emitted + drafts[:i]] for i in range(k + 1)])  # [k+1, V]
    q = one_hot_draft(drafts, VOCAB, p)                                      # [k, V]
    accept = accept_probability(p[:k], q, torch.tensor(drafts)).tolist()     # [k]
    law, reach = {}, 1.0
    for n in range(k + 1):
        final = (p[k] if n == k else residual_distribution(p[n], q[n])).tolist()
        stop = 1.0 if n == k else 1 - accept[n]
        for x in range(VOCAB):
            law[drafts[:n] + (x,)] = law.get(drafts[:n] + (x,), 0.0) + reach * stop * final[x]
        if n < k:
            reach *= accept[n]
    return law


def test_one_hot_q_accepts_with_chance_p_and_resamples_from_p_without_x():
    p = torch.tensor([[0.5, 0.3, 0.2]], dtype=torch.float64)
    q = one_hot_draft([1], 3, p)
    assert accept_probability(p, q, torch.tensor([1])).item() == pytest.approx(0.3)
    assert residual_distribution(p[0], q[0]).tolist() == pytest.approx([0.5 / 0.7, 0.0, 0.2 / 0.7])


def test_lookup_rounds_emit_the_target_chain_by_exact_enumeration():
    """Rounds of 0..3 copied tokens (ties, p(x) = 1, p(x) = 0, matches running past the end): the law of the
    first 4 emitted tokens equals the target's chain."""
    tables = target_tables(seed=3)
    law = {(): 1.0}
    while any(len(seq) < HORIZON for seq in law):
        nxt = {}
        for seq, mass in law.items():
            rounds = round_law(tables, seq).items() if len(seq) < HORIZON else [((), 1.0)]
            for emitted, m in rounds:
                key = (seq + emitted)[:HORIZON]
                nxt[key] = nxt.get(key, 0.0) + mass * m
        law = nxt
    proposed = {len(propose(PROMPT + s, GAMMA, 2).tokens) for n in range(HORIZON) for s in itertools.product(range(3), repeat=n)}
    assert proposed == {1, 2, 3}  # full and cut-short copies occur (every context here has a 1-gram match)
    for seq in itertools.product(range(VOCAB), repeat=HORIZON):
        assert law.get(seq, 0.0) == pytest.approx(target_chain(tables, seq), abs=1e-12)


def test_lookup_rounds_emit_the_target_chain_by_sampling():
    """N = 200,000 samples until 3 tokens, with the lookup's one-hot q: every round groups the samples standing at
    the same context (its proposal and rows are then the same) and decides each group in one verify_round call
    (`verify` decides as verify_round does: test_sampling). Chi-square over the 27 sequences (at most 20 bins of
    >= 5% mass), p > 1e-3: catches w >= 0.015 with power 0.9 (the former 20,000 runs of `verify`: w >= 0.046)."""
    tables = {k: v.float() for k, v in target_tables(seed=4).items()}
    gen = torch.Generator().manual_seed(5)
    live = {(): 200_000}  # context -> samples standing there
    counts = {}
    while live:
        after = {}
        for emitted, n in live.items():
            drafts = propose(PROMPT + emitted, GAMMA, max_ngram=2).tokens
            p = torch.stack([tables[emitted + tuple(drafts[:i])] for i in range(len(drafts) + 1)])  # [k+1, V]
            if drafts:
                out = bulk.rounds(p, one_hot_draft(drafts, VOCAB, p), n, seed=int(torch.randint(1 << 30, (1,), generator=gen)))
                rows = out.tokens.tolist()
            else:  # nothing proposed: the round is one token from p
                rows = [[x] for x in torch.multinomial(p[0], n, replacement=True, generator=gen).tolist()]
            for row in rows:
                seq = (emitted + tuple(x for x in row if x >= 0))
                table = counts if len(seq) >= 3 else after
                table[seq[:3] if len(seq) >= 3 else seq] = table.get(seq[:3] if len(seq) >= 3 else seq, 0) + 1
        live = after
    seqs = list(itertools.product(range(VOCAB), repeat=3))
    assert sum(counts.values()) == 200_000
    assert chi_square_pvalue([counts.get(s, 0) for s in seqs], [target_chain(tables, s) for s in seqs]) > P_MIN
