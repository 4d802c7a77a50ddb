"""specviz.sampling: speculative sampling reproduces the target distribution exactly.

Statistical tests use a seeded torch.Generator, state their sample size, and require a
chi-square p-value above P_MIN (bins merged to >= 5% expected mass). With fixed seeds they are
deterministic; P_MIN = 1e-3 would flag a real bias of a few percent at these sample sizes.
"""
from __future__ import annotations

import itertools
import re

import numpy as np
import pytest
import torch

from specviz.core.sampling import (
    accept_probability,
    acceptance_rate,
    kl_divergence,
    residual_distribution,
    tv_distance,
    verify,
    verify_round,
)
from specviz.core.warping import warp
from tests import bulk
from tests.stats import chi_square_pvalue

P_MIN = 1e-3
N_SAMPLES = 20_000
N_BULK = 200_000  # rounds decided in one verify_round call


def normalise(x):
    x = torch.as_tensor(x, dtype=torch.float64)
    return x / x.sum(-1, keepdim=True)


def random_probs(gen, shape, concentration=1.0):
    """Random rows from a seeded generator; a smaller concentration gives peakier rows."""
    u = torch.rand(shape, generator=gen, dtype=torch.float64).clamp_min(1e-12)
    g = (-u.log()) ** (1.0 / concentration)
    return g / g.sum(-1, keepdim=True)


V = 8
PAIRS = {
    "p_equals_q": (normalise([1, 2, 3, 4, 5, 6, 7, 8]), normalise([1, 2, 3, 4, 5, 6, 7, 8])),
    "disjoint_supports": (normalise([1, 1, 1, 1, 0, 0, 0, 0]), normalise([0, 0, 0, 0, 1, 2, 3, 4])),
    "one_hot_p": (normalise([0, 0, 1, 0, 0, 0, 0, 0]), normalise([1, 1, 1, 1, 1, 1, 1, 1])),
    "one_hot_q": (normalise([1, 2, 3, 4, 4, 3, 2, 1]), normalise([0, 0, 0, 0, 0, 1, 0, 0])),
    "overconfident_draft": (normalise([3, 3, 2, 2, 1, 1, 1, 1]), normalise([90, 4, 2, 1, 1, 1, 0.5, 0.5])),
    "tiny_probabilities": (normalise([1e-7, 0.3, 1e-6, 0.2, 0.5, 1e-7, 1e-5, 1e-8]),
                           normalise([0.25, 1e-7, 0.25, 1e-6, 0.25, 0.25, 1e-8, 1e-7])),
}


def first_token_law(target, draft):
    """P(first emitted token = x) from the rule itself: accepted mass + rejected mass * residual."""
    everything = torch.arange(target.shape[-1])
    accept = accept_probability(target.expand(len(everything), -1), draft.expand(len(everything), -1), everything)
    accepted_mass = draft * accept                       # q(x) min(1, p(x)/q(x))
    rejected = 1 - accepted_mass.sum()
    return accepted_mass + rejected * residual_distribution(target, draft)


# ----------------------------------------------------------------------------- residual


def test_residual_is_normalised_positive_part_of_p_minus_q():
    target, draft = normalise([0.5, 0.3, 0.2]), normalise([0.2, 0.5, 0.3])
    assert torch.allclose(residual_distribution(target, draft), normalise([0.3, 0, 0]))


def test_residual_of_identical_rows_is_the_target_not_nan():
    target = normalise([1, 2, 3])
    residual = residual_distribution(target, target.clone())
    assert torch.isfinite(residual).all()
    assert torch.equal(residual, target)


def test_residual_handles_rows_independently():
    target = torch.stack([normalise([1, 1]), normalise([3, 1])])
    draft = torch.stack([normalise([1, 1]), normalise([1, 3])])
    assert torch.allclose(residual_distribution(target, draft), torch.tensor([[0.5, 0.5], [1.0, 0.0]], dtype=torch.float64))


# ----------------------------------------------------------------------------- hand-set outcomes


def test_identical_models_accept_every_draft_and_add_a_bonus_token():
    gen = torch.Generator().manual_seed(0)
    probs = normalise([1, 2, 3, 4])
    target = torch.stack([probs, probs, probs, normalise([0, 0, 0, 1])])
    out = verify(target, torch.stack([probs] * 3), torch.tensor([0, 1, 2]), generator=gen)
    assert out.n_accepted == 3 and out.bonus
    assert out.tokens == [0, 1, 2, 3]  # the bonus comes from target_probs[gamma], one-hot on 3
    assert torch.equal(out.final_probs, target[3])


def test_draft_token_the_target_rules_out_is_always_rejected_and_replaced_from_the_residual():
    gen = torch.Generator().manual_seed(0)
    target = torch.stack([normalise([0, 1, 0]), normalise([1, 1, 1])])
    draft = normalise([[1, 0, 0]])
    for _ in range(50):
        out = verify(target, draft, torch.tensor([0]), generator=gen)
        assert out.n_accepted == 0 and out.tokens == [1] and out.accept_probs.tolist() == [0.0]


def test_accept_probability_is_min_one_p_over_q():
    target, draft = normalise([[0.1, 0.9]]), normalise([[0.4, 0.6]])
    assert accept_probability(target, draft, torch.tensor([0])).item() == pytest.approx(0.25)
    assert accept_probability(target, draft, torch.tensor([1])).item() == pytest.approx(1.0)


def test_verification_records_one_uniform_per_examined_position():
    gen = torch.Generator().manual_seed(3)
    target = torch.stack([normalise([1, 0]), normalise([0, 1]), normalise([1, 1]), normalise([1, 1])])
    draft = normalise([[1, 0], [1, 0], [1, 1]])
    out = verify(target, draft, torch.tensor([0, 0, 1]), generator=gen)
    # position 0 is certain to be accepted, position 1 certain to be rejected: 2 examined
    assert out.n_accepted == 1 and out.n_examined == 2 and not out.bonus
    assert out.tokens == [0, 1]
    assert out.accept_probs.tolist() == [1.0, 0.0]
    # the unexamined third position still reports the chance min(1, p/q) = 1 it would have had
    assert out.drafted_accept_probs.tolist() == [1.0, 0.0, 1.0]


def test_same_generator_seed_gives_same_verification():
    gen_probs = torch.Generator().manual_seed(5)
    target, draft = random_probs(gen_probs, (5, 30)), random_probs(gen_probs, (4, 30))
    tokens = torch.multinomial(draft, 1, generator=gen_probs).squeeze(-1)
    a = verify(target, draft, tokens, generator=torch.Generator().manual_seed(11))
    b = verify(target, draft, tokens, generator=torch.Generator().manual_seed(11))
    assert a.tokens == b.tokens and torch.equal(a.uniforms, b.uniforms)


# ----------------------------------------------------------------------------- exactness by algebra


@pytest.mark.parametrize("name", list(PAIRS))
def test_first_token_law_equals_target_for_adversarial_pairs(name):
    target, draft = PAIRS[name]
    assert torch.allclose(first_token_law(target, draft), target, atol=1e-6)


def test_first_token_law_equals_target_for_random_pairs():
    gen = torch.Generator().manual_seed(1)
    for vocab in (2, 3, 10, 1000):
        for concentration in (0.1, 1.0, 10.0):
            target = random_probs(gen, (vocab,), concentration)
            draft = random_probs(gen, (vocab,), concentration)
            assert torch.allclose(first_token_law(target, draft), target, atol=1e-6)


def test_rejection_mass_equals_residual_normaliser():
    """1 - sum min(p, q) = sum max(0, p - q): the 'magic' of "Speculative Sampling Explained" and
    Leviathan et al.'s Lemma 3.3."""
    gen = torch.Generator().manual_seed(2)
    target, draft = random_probs(gen, (50,)), random_probs(gen, (50,))
    assert (1 - acceptance_rate(target, draft)).item() == pytest.approx(torch.clamp(target - draft, min=0).sum().item())
    assert (1 - acceptance_rate(target, draft)).item() == pytest.approx(tv_distance(target, draft).item())


# ----------------------------------------------------------------------------- exactness by sampling


def test_verify_decides_as_verify_round_does_on_the_uniforms_it_draws():
    """`verify` (the checked, host-side round) adds checks and one read to `verify_round`, whose law the bulk
    tests below prove: for 300 seeded rounds of every pair its tokens are verify_round's on the uniforms it drew
    (gamma + V float64 in one draw: gamma against the accept chances, V for the last token's race), draw for draw."""
    for name, (target, draft) in PAIRS.items():
        target2 = torch.stack([target, target]).float()
        draft1 = draft.float().unsqueeze(0)
        for seed in range(50):
            x = torch.multinomial(draft1[0], 1, generator=torch.Generator().manual_seed(1_000 + seed))
            gen = torch.Generator().manual_seed(seed)
            uniforms = torch.rand(1 + target2.shape[-1], generator=gen, dtype=torch.float64)  # gamma + V, one draw
            expected = verify_round(target2, draft1, x, uniforms)
            got = verify(target2, draft1, x, generator=torch.Generator().manual_seed(seed))
            n = int(expected.n_accepted)
            assert (got.n_accepted, got.tokens) == (n, expected.tokens[: n + 1].tolist()), (name, seed)


@pytest.mark.parametrize("seed, name", list(enumerate(PAIRS)))
def test_first_emitted_token_is_distributed_as_target(seed, name):
    """N = 200,000 rounds per pair (gamma = 2, the second position's rows random), decided in one call of
    verify_round: chi-square of the first emitted token against p, p > 1e-3, over bins of >= 5% mass (at most 8 here);
    it catches any law at Cohen's w >= 0.013 from p with power 0.9 (`stats.detectable_effect`; e.g. 0.4% of the mass
    moved between two bins of 20%; at the former 20,000 rounds, w >= 0.040). Acceptance within 4 sigma of sum min(p, q)."""
    target, draft = PAIRS[name]
    gen = torch.Generator().manual_seed(100 + seed)
    target_rows = torch.stack([target, random_probs(gen, (V,)), random_probs(gen, (V,))])  # [gamma+1, V]
    draft_rows = torch.stack([draft, random_probs(gen, (V,))])                            # [gamma, V]
    out = bulk.rounds(target_rows, draft_rows, N_BULK, seed=100 + seed)
    counts = np.bincount(out.tokens[:, 0].numpy(), minlength=V)
    if (target > 0).sum() == 1:  # a one-hot target: nothing for a chi-square to weigh, every token must be it
        assert counts[int(target.argmax())] == N_BULK
    else:
        assert chi_square_pvalue(counts, target.numpy()) > P_MIN
    expected = acceptance_rate(target, draft).item()
    sigma = (expected * (1 - expected) / N_BULK) ** 0.5
    assert abs(out.accepted[:, 0].double().mean().item() - expected) <= 4 * sigma + 1e-9


def test_three_position_joint_law_matches_target_chain_by_exact_enumeration():
    """gamma = 3, V = 3, prefix-dependent tables: P(first 4 emitted tokens) = prod of target conditionals."""
    vocab, gamma, horizon = 3, 3, 4
    gen = torch.Generator().manual_seed(7)
    tables_t = {pre: random_probs(gen, (vocab,), 0.7) for n in range(horizon + gamma + 1)
                for pre in itertools.product(range(vocab), repeat=n)}
    tables_d = {pre: random_probs(gen, (vocab,), 0.7) for pre in tables_t}

    def one_round(prefix):
        """Exact law of the tokens one verify round emits after `prefix`: {tuple: probability}."""
        law = {}
        for drafts in itertools.product(range(vocab), repeat=gamma):
            q = torch.stack([tables_d[prefix + drafts[:i]] for i in range(gamma)])      # [gamma, V]
            p = torch.stack([tables_t[prefix + drafts[:i]] for i in range(gamma + 1)])  # [gamma+1, V]
            weight = float(torch.prod(q[torch.arange(gamma), torch.tensor(drafts)]))
            acc = accept_probability(p[:gamma], q, torch.tensor(drafts)).tolist()      # [gamma]
            for n in range(gamma + 1):
                final = (p[gamma] if n == gamma else residual_distribution(p[n], q[n])).tolist()
                stop = 1.0 if n == gamma else 1 - acc[n]
                for x in range(vocab):
                    key = drafts[:n] + (x,)
                    law[key] = law.get(key, 0.0) + weight * stop * final[x]
                if n < gamma:
                    weight *= acc[n]
        return law

    rounds = {}
    law = {(): 1.0}
    while any(len(seq) < horizon for seq in law):
        nxt = {}
        for seq, mass in law.items():
            if len(seq) >= horizon:
                nxt[seq[:horizon]] = nxt.get(seq[:horizon], 0.0) + mass
                continue
            if seq not in rounds:
                rounds[seq] = one_round(seq)
            for emitted, m in rounds[seq].items():
                key = (seq + emitted)[:horizon]
                nxt[key] = nxt.get(key, 0.0) + mass * m
        law = nxt
    for seq in itertools.product(range(vocab), repeat=horizon):
        expected = 1.0
        for i in range(horizon):
            expected *= float(tables_t[seq[:i]][seq[i]])
        assert law.get(seq, 0.0) == pytest.approx(expected, abs=1e-9)


def random_prefix_tables(vocab: int, longest: int, seed: int) -> bulk.PrefixTables:
    """Random target and draft rows (Dirichlet 0.7) for every prefix of up to `longest` tokens."""
    gen = torch.Generator().manual_seed(seed)
    tables_t = {pre: random_probs(gen, (vocab,), 0.7).float() for n in range(longest + 1)
                for pre in itertools.product(range(vocab), repeat=n)}
    tables_d = {pre: random_probs(gen, (vocab,), 0.7).float() for pre in tables_t}
    return bulk.PrefixTables(tables_t, tables_d, vocab)


def test_three_position_joint_law_matches_target_chain_by_sampling():
    """N = 200,000 samples (gamma = 3, V = 3, prefix-dependent rows) advanced round by round in bulk until 3 tokens:
    chi-square over the 27 sequences (at most 20 bins of >= 5% mass), p > 1e-3; catches w >= 0.015 with power 0.9
    (at the former 20,000 runs: w >= 0.046)."""
    vocab, gamma, horizon = 3, 3, 3
    tables = random_prefix_tables(vocab, horizon + gamma, seed=8)
    counts = bulk.emitted_sequences(tables, gamma, horizon, N_BULK, seed=8)
    seqs = list(itertools.product(range(vocab), repeat=horizon))
    assert chi_square_pvalue(counts, [tables.law(s) for s in seqs]) > P_MIN


# ----------------------------------------------------------------------------- warping and greedy


def test_temperature_zero_is_one_hot_argmax():
    probs = warp(torch.tensor([[0.1, 2.0, -1.0], [3.0, 0.0, 0.0]]), temperature=0)
    assert torch.equal(probs, torch.tensor([[0.0, 1.0, 0.0], [1.0, 0.0, 0.0]]))


def test_greedy_verify_accepts_iff_argmaxes_agree():
    gen = torch.Generator().manual_seed(0)
    target = warp(torch.tensor([[0.0, 5.0, 1.0], [4.0, 0.0, 1.0], [0.0, 0.0, 9.0]]), temperature=0)
    draft = warp(torch.tensor([[0.0, 3.0, 1.0], [0.0, 2.0, 1.0]]), temperature=0)
    out = verify(target, draft, draft.argmax(-1), generator=gen)
    assert out.n_accepted == 1 and out.tokens == [1, 0]  # agrees at 0, the target's argmax replaces at 1


def test_top_k_keeps_k_tokens_and_top_p_keeps_the_nucleus():
    logits = torch.log(torch.tensor([0.5, 0.3, 0.15, 0.05]))
    assert (warp(logits, top_k=2) > 0).sum() == 2
    assert torch.allclose(warp(logits, top_p=0.7), torch.tensor([0.625, 0.375, 0.0, 0.0]))
    assert torch.allclose(warp(logits, temperature=1.0), torch.tensor([0.5, 0.3, 0.15, 0.05]))


def test_temperature_scales_logits():
    logits = torch.tensor([1.0, 2.0, 3.0])
    assert torch.allclose(warp(logits, temperature=0.5), (logits / 0.5).softmax(-1))


# ----------------------------------------------------------------------------- divergences


def test_kl_divergence_handles_zeros():
    p, q = normalise([0.5, 0.5, 0]), normalise([0.25, 0.25, 0.5])
    assert kl_divergence(p, q).item() == pytest.approx(float(torch.log(torch.tensor(2.0))))
    assert kl_divergence(q, p).item() == float("inf")
    assert kl_divergence(p, p).item() == 0.0


# ----------------------------------------------------------------------------- bad input


def valid_inputs(gamma=2, vocab=4):
    target = torch.full((gamma + 1, vocab), 1.0 / vocab)
    draft = torch.full((gamma, vocab), 1.0 / vocab)
    return target, draft, torch.zeros(gamma, dtype=torch.long)


@pytest.mark.parametrize("mutate, message", [
    (lambda t, d, x: (t[:2], d, x), "gamma+1"),
    (lambda t, d, x: (t, d[:, :3] / d[:, :3].sum(-1, keepdim=True), x), "gamma+1"),
    (lambda t, d, x: (t, d.clone().index_put_((torch.tensor(0), torch.tensor(1)), torch.tensor(-0.1)), x), "negative"),
    (lambda t, d, x: (t * 1.01, d, x), "sum to 1"),
    (lambda t, d, x: (t.clone().index_put_((torch.tensor(0), torch.tensor(0)), torch.tensor(float("nan"))), d, x), "NaN"),
    # the checks read every row's stats at once: a NaN or inf in a later row must not hide behind a good one
    (lambda t, d, x: (t, d.clone().index_put_((torch.tensor(1), torch.tensor(3)), torch.tensor(float("nan"))), x),
     "draft_probs contains NaN"),
    (lambda t, d, x: (t.clone().index_put_((torch.tensor(2), torch.tensor(1)), torch.tensor(float("inf"))), d, x),
     "target_probs contains NaN or infinite"),
    (lambda t, d, x: (t, d.clone().index_put_((torch.tensor(1), torch.tensor(2)), torch.tensor(-0.1)), x),
     "draft_probs has negative"),
    (lambda t, d, x: (t, torch.tensor([[1.0, 0, 0, 0], [0.25] * 4]), torch.tensor([2, 0])), "zero draft probability"),
    (lambda t, d, x: (t[:1], d[:0], x[:0]), "gamma >= 1"),
    (lambda t, d, x: (t, d, torch.tensor([0, 9])), "lie in"),
    (lambda t, d, x: (t, d, torch.tensor([0])), "integer ids"),
    (lambda t, d, x: (t, d, torch.tensor([True, False])), "integer ids"),
])
def test_bad_input_raises_value_error_naming_the_problem(mutate, message):
    target, draft, tokens = mutate(*valid_inputs())
    with pytest.raises(ValueError, match=re.escape(message)):
        verify(target, draft, tokens)


def test_negative_kl_budget_is_rejected():
    with pytest.raises(ValueError, match="kl_budget"):
        verify(*valid_inputs(), kl_budget=-0.1)


@pytest.mark.parametrize("kwargs, message", [
    ({"temperature": -1}, "temperature"), ({"top_k": -2}, "top_k"), ({"top_p": 0.0}, "top_p"), ({"top_p": 1.5}, "top_p"),
])
def test_bad_warping_knobs_raise(kwargs, message):
    with pytest.raises(ValueError, match=message):
        warp(torch.zeros(5), **kwargs)


@pytest.mark.parametrize("logits", [torch.tensor(2.0), torch.zeros(0), torch.zeros(2, 0)])
def test_logits_without_a_vocabulary_dimension_are_refused(logits):
    with pytest.raises(ValueError, match="vocabulary dimension"):
        warp(logits)


def test_draft_tokens_of_any_integer_dtype_are_verified_as_ids():
    """uint8 / int16 ids index a vocabulary larger than their own range once widened (no overflow in a clamp)."""
    vocab = 300
    target, draft = torch.full((3, vocab), 1.0 / vocab), torch.full((2, vocab), 1.0 / vocab)
    for dtype in (torch.uint8, torch.int16, torch.int32, torch.int64):
        result = verify(target, draft, torch.tensor([5, 200], dtype=dtype), generator=torch.Generator().manual_seed(0))
        assert result.n_accepted == 2 and result.tokens[:2] == [5, 200]  # p = q: every draft is accepted


def test_inverse_cdf_sampler_matches_its_distribution_and_skips_zeros():
    """N = 20,000 draws from a seeded generator; chi-square p > 1e-3; zero-probability tokens never drawn."""
    from specviz.core.sampling import sample

    probs = normalise([0.0, 0.1, 0.0, 0.3, 1e-9, 0.6, 0.0]).float()
    gen = torch.Generator().manual_seed(12)
    counts = torch.zeros(len(probs))
    for _ in range(N_SAMPLES):
        counts[sample(probs, gen)] += 1
    assert counts[probs == 0].sum() == 0
    assert chi_square_pvalue(counts.numpy(), probs.double().numpy()) > P_MIN
    assert sample(normalise([0, 0, 1, 0]).float(), gen) == 2


def test_sampling_nan_probabilities_is_a_message_not_an_index_error():
    from specviz.core.sampling import sample

    with pytest.raises(ValueError, match="NaN"):
        sample(torch.full((5,), float("nan")), torch.Generator().manual_seed(0))
