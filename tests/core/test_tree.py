"""specviz.core.tree: multi-draft verification is exact, k = 1 is the chain, merging is biased.

The oracle here shares no code with the implementation: the enumeration over candidate tuples and
orders, the residuals and the weights are numpy written in this file. What it takes from the
implementation is what is under test: the accept chances it computes and the residual it ends with
(read by judging every candidate with u = 1, so that each is rejected and each chance is reported).
"""
from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
import torch

from specviz.core import sampling, tree
from specviz.core.config import DecodeConfig


def _law_through_implementation(p: np.ndarray, q: np.ndarray, k: int, merge: bool) -> np.ndarray:
    """P(first emitted token = x): the sum over every k-tuple of i.i.d. draft samples and every order
    (uniform over the tuple's orders, or over its distinct tokens' orders when merging) of
    sum_j prod_{i<j} (1 - a_i) a_j delta_{x_j} + prod_i (1 - a_i) p_final."""
    out = np.zeros_like(p)
    tp, tq = torch.tensor(p), torch.tensor(q)
    for tup in itertools.product(range(len(p)), repeat=k):
        weight = math.prod(q[x] for x in tup)
        if weight == 0:
            continue
        pool = list(dict.fromkeys(tup)) if merge else list(tup)
        orders = list(itertools.permutations(pool))
        for order in orders:
            level = tree.judge_level(tp, tq, list(order), torch.ones(len(order), dtype=torch.float64))
            chances = [t.accept_prob for t in level.tries]
            survive = 1.0
            for x, a in zip(order, chances):
                out[x] += weight / len(orders) * survive * a
                survive *= 1 - a
            out += weight / len(orders) * survive * level.probs.numpy()
    return out


def _residual(p, q):  # the test's own norm(max(0, p - q))
    r = np.maximum(p - q, 0)
    return r / r.sum() if r.sum() > 0 else p


LAWS = [  # (p, q) over small vocabularies: overconfident draft, disjoint-ish, a zero in p, a zero in q
    (np.array([0.5, 0.3, 0.2]), np.array([0.2, 0.2, 0.6])),
    (np.array([0.1, 0.6, 0.3, 0.0]), np.array([0.4, 0.1, 0.1, 0.4])),
    (np.array([0.25, 0.25, 0.5, 0.0]), np.array([0.7, 0.0, 0.1, 0.2])),
]


@pytest.mark.parametrize("k", [2, 3])
@pytest.mark.parametrize("p,q", LAWS)
def test_first_token_law_is_the_target_exactly(p, q, k):
    assert np.abs(_law_through_implementation(p, q, k, merge=False) - p).max() < 1e-9


def test_accept_chances_are_judged_against_the_current_residual():
    p, q = LAWS[0]
    level = tree.judge_level(torch.tensor(p), torch.tensor(q), [2, 2, 0], torch.ones(3, dtype=torch.float64))
    p1 = _residual(p, q)
    p2 = _residual(p1, q)
    assert [t.accept_prob for t in level.tries] == pytest.approx([min(1, p[2] / q[2]), min(1, p1[2] / q[2]),
                                                                    min(1, p2[0] / q[0])], abs=1e-12)
    assert level.tries[0].residual.numpy() == pytest.approx(p1, abs=1e-12)


def test_merging_identical_candidates_is_biased_from_three_drafts():
    """k = 3, p = q non-uniform: exact keeps p; trying each distinct token once (random order of the
    distinct tokens) makes the first tried token more often a rare one, and the law moves by > 0.02."""
    p = np.array([0.6, 0.2, 0.2])
    merged = _law_through_implementation(p, p.copy(), 3, merge=True)
    assert np.abs(merged - p).max() > 0.02
    assert np.abs(_law_through_implementation(p, p.copy(), 3, merge=False) - p).max() < 1e-9


def test_merging_is_biased_at_two_drafts_when_the_residual_overlaps_the_draft():
    """k = 2, p = (0.5, 0.3, 0.2), q = (0.2, 0.2, 0.6): two chains that both drafted token 2 are two tries.
    The second is a sure rejection (its residual mass is 0), but it moves p one residual further,
    norm(max(0, p' - q)) != p', and the correction is drawn from there. Merged, the law moves by 0.04."""
    p, q = LAWS[0]
    assert np.abs(_law_through_implementation(p, q, 2, merge=True) - p).max() > 0.03


@pytest.mark.parametrize("k", [2, 3])
def test_merging_is_harmless_when_the_draft_is_one_hot(k):
    """q one-hot at x: every chain drafted x; after one rejection p'(x) = 0, so the next residual is
    p' again and the extra tries change nothing. A test that the enumeration can tell the two apart
    only where the maths says they differ."""
    p, q = np.array([0.2, 0.5, 0.3]), np.array([1.0, 0.0, 0.0])
    assert np.abs(_law_through_implementation(p, q, k, merge=True) - p).max() < 1e-9


@pytest.mark.slow  # a planted variant shown caught by sampling, 20,000 rounds (8.4 s)
def test_merged_variant_of_verify_tree_is_caught_by_sampling():
    """N = 20,000 seeded rounds, k = 4, gamma = 1, p = q = (0.7, 0.1, 0.1, 0.1): the exact rule's first
    token passes chi-square (p > 1e-3), the merged one fails (p < 1e-6)."""
    from tests.stats import chi_square_pvalue

    p = torch.tensor([[0.7, 0.1, 0.1, 0.1]], dtype=torch.float64)
    counts = {False: np.zeros(4), True: np.zeros(4)}
    for merge in counts:
        gen = torch.Generator().manual_seed(1)
        for _ in range(20_000):
            chains = torch.multinomial(p[0], 4, replacement=True, generator=gen)[:, None]  # [4, 1]
            out = tree.verify_tree(p.expand(4, 2, 4).contiguous(), p.expand(4, 1, 4).contiguous(), chains,
                                   generator=gen, merge_identical=merge)
            counts[merge][out.tokens[0]] += 1
    assert chi_square_pvalue(counts[False], p[0].numpy()) > 1e-3
    assert chi_square_pvalue(counts[True], p[0].numpy()) < 1e-6


@pytest.mark.parametrize("k", [pytest.param(2, marks=pytest.mark.slow), 4])  # k = 2 in the full run only (6 s each)
def test_the_first_two_tokens_of_tree_rounds_follow_the_target_chain(k):
    """N = 8,000 samples, k chains of gamma = 2 drawn i.i.d. from prefix-dependent draft rows (V = 3), verified
    as a token tree round after round until two tokens: chi-square over the 9 sequences against the target chain,
    p > 1e-3 (9 bins: catches w >= 0.064 with power 0.9; the engine's 1,500 decoder runs this joins caught w >= 0.17). The engine's tree decoder feeds this rule from real models
    (tests/engine/test_tree_decoder.py); here its levels below the first are judged on known laws."""
    from tests import bulk
    from tests.core.test_sampling import random_probs
    from tests.stats import chi_square_pvalue

    vocab, gamma, n = 3, 2, 8_000
    gen = torch.Generator().manual_seed(30 + k)
    rows_t = {pre: random_probs(gen, (vocab,), 0.7) for m in range(2 + gamma + 1)
              for pre in itertools.product(range(vocab), repeat=m)}
    rows_d = {pre: random_probs(gen, (vocab,), 0.7) for pre in rows_t}
    tables = bulk.PrefixTables(rows_t, rows_d, vocab)
    counts = np.zeros(vocab ** 2)
    for _ in range(n):
        prefix = ()
        while len(prefix) < 2:
            chains = [[] for _ in range(k)]
            for chain in chains:  # each chain draws its own tokens from the draft's row at its node
                for _ in range(gamma):
                    chain.append(int(torch.multinomial(rows_d[prefix + tuple(chain)], 1, generator=gen)))
            p = torch.stack([torch.stack([rows_t[prefix + tuple(c[:d])] for d in range(gamma + 1)]) for c in chains])
            q = torch.stack([torch.stack([rows_d[prefix + tuple(c[:d])] for d in range(gamma)]) for c in chains])
            prefix += tuple(tree.verify_tree(p, q, torch.tensor(chains), generator=gen).tokens)
        counts[prefix[0] * vocab + prefix[1]] += 1
    law = [tables.law(seq) for seq in itertools.product(range(vocab), repeat=2)]
    assert chi_square_pvalue(counts, law) > 1e-3


@pytest.mark.parametrize("seed", range(20))
def test_one_draft_is_sampling_verify_draw_for_draw(seed):
    gen = torch.Generator().manual_seed(100 + seed)
    gamma, vocab = 3, 6
    target = torch.softmax(torch.randn(gamma + 1, vocab, generator=gen) * 2, -1)
    draft = torch.softmax(torch.randn(gamma, vocab, generator=gen) * 2, -1)
    tokens = torch.multinomial(draft, 1, generator=gen)[:, 0]
    g1, g2 = torch.Generator().manual_seed(seed), torch.Generator().manual_seed(seed)
    chain = sampling.verify(target, draft, tokens, generator=g1)
    tree_out = tree.verify_tree(target[None], draft[None], tokens[None], generator=g2)
    assert tree_out.tokens == chain.tokens and tree_out.n_accepted == chain.n_accepted
    assert [lv.tries[0].uniform for lv in tree_out.levels] == chain.uniforms.tolist()
    assert torch.equal(g1.get_state(), g2.get_state())


def test_level_acceptance_closed_form_matches_enumeration():
    p, q = LAWS[1]
    for k in range(1, 5):
        # the test's own enumeration: chance that some try of k i.i.d. draft samples is accepted
        accept = 0.0
        for tup in itertools.product(range(len(p)), repeat=k):
            cur, survive = p, 1.0
            for x in tup:
                a = min(1.0, cur[x] / q[x]) if q[x] > 0 else 0.0
                accept += math.prod(q[y] for y in tup) * survive * a
                survive *= 1 - a
                cur = _residual(cur, q)
        assert tree.level_acceptance(torch.tensor(p), torch.tensor(q), k) == pytest.approx(accept, abs=1e-12)
    assert tree.level_acceptance(torch.tensor(p), torch.tensor(q), 1) == pytest.approx(np.minimum(p, q).sum())


def test_greedy_tree_emits_the_target_argmax():
    """T = 0: one-hot rows; whichever chain matches the target's argmax is kept, else the argmax is the correction."""
    target = torch.eye(5, dtype=torch.float64)[[1, 2, 3]]  # argmax 1, then 2, then bonus 3
    draft = torch.eye(5, dtype=torch.float64)
    chains = torch.tensor([[0, 4], [1, 2], [1, 0]])
    out = tree.verify_tree(target.expand(3, 3, 5).contiguous(), draft[chains], chains, generator=torch.Generator())
    assert out.tokens == [1, 2, 3] and out.path_chain == 1


@pytest.mark.parametrize("kwargs,message", [
    (dict(drafts=0), "drafts must be a whole number in 1..8"),
    (dict(drafts=9), "drafts must be a whole number in 1..8"),
    (dict(drafts=2.5), "drafts must be a whole number"),
    (dict(drafts=2, kl_budget=0.1), "drafts > 1 needs kl_budget = 0"),
])
def test_bad_drafts_are_refused_naming_the_knob(kwargs, message):
    with pytest.raises(ValueError, match=message.replace(".", r"\.").replace(">", ">")):
        DecodeConfig(**kwargs)


def test_bad_shapes_are_refused():
    p = torch.full((2, 2, 3), 1 / 3)
    with pytest.raises(ValueError, match="draft_tokens must be"):
        tree.verify_tree(p, p[:, :1], torch.tensor([0, 1]))
