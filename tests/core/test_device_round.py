"""The round on the device (sampling.race, verify_round, pack): exact, and read once.

The oracles are written here in numpy and plain Python (accept chance min(1, p/q), residual
norm(max(0, p - q)), the exponential race argmax w / E with E = -log u), sharing no code with specviz.core.
Statistical tests: a seeded torch.Generator, N stated per test, chi-square p > P_MIN = 1e-3 over
bins of >= 5% expected mass (tests/stats.py), which flags a bias of a few percent at these sizes.
"""
from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch

from specviz.core.sampling import NO_TOKEN, mentored_plan, pack, race, race_keys, round_uniforms, verify_round
from tests import bulk
from tests.stats import chi_square_pvalue

P_MIN = 1e-3


def random_rows(gen, shape, zeros=0):
    """Seeded rows of probabilities; the first `zeros` entries of each row are set to 0."""
    x = -torch.rand(shape, generator=gen, dtype=torch.float64).clamp_min(1e-12).log()
    if zeros:
        x[..., :zeros] = 0
    return x / x.sum(-1, keepdim=True)


def oracle_race(weights, uniforms):
    """The exponential race in numpy: E = -log u (u = 0 as the smallest positive float64), the token of the largest
    w / E, i.e. the first of the smallest E / w among tokens of positive weight."""
    e = -np.log(np.maximum(np.asarray(uniforms, dtype=np.float64), np.finfo(np.float64).tiny))
    w = np.asarray(weights, dtype=np.float64)
    ratio = np.where(w > 0, e / np.where(w > 0, w, 1.0), np.inf)
    return int(np.argmin(ratio))


def oracle_accept(p, q):
    return np.minimum(1.0, p / q)


def oracle_residual(p, q):
    mass = np.maximum(p - q, 0.0)
    return mass / mass.sum() if mass.sum() > 0 else p


# ----------------------------------------------------------------------------- the exponential race


def test_the_race_at_given_uniforms_is_the_largest_weight_over_its_exponential():
    gen = torch.Generator().manual_seed(1)
    weights = random_rows(gen, (7,), zeros=2)
    weights[4] = 0  # a zero inside the row too
    uniforms = torch.rand(500, 7, generator=gen, dtype=torch.float64)
    drawn = race(weights.expand(500, 7), race_keys(uniforms))
    assert drawn.dtype == torch.long and drawn.shape == (500,)
    assert drawn.tolist() == [oracle_race(weights.tolist(), u) for u in uniforms.tolist()]


def test_the_race_draws_each_token_with_its_share_of_the_weights():
    """N = 200,000 races over V = 7 unnormalised weights (three of them 0), drawn in one call: chi-square of the
    tokens against weight / sum, p > 1e-3 (bins of >= 5% mass: at most 4 here; catches w >= 0.011 with power 0.9,
    `tests.stats.detectable_effect`), and a token of weight 0 never drawn."""
    weights = torch.tensor([0.0, 2.5, 0.0, 1.0, 0.75, 0.25, 0.0], dtype=torch.float32)
    uniforms = torch.rand(200_000, 7, generator=torch.Generator().manual_seed(2), dtype=torch.float64)
    counts = torch.bincount(race(weights.expand(200_000, 7), race_keys(uniforms)), minlength=7).numpy()
    assert counts[[0, 2, 6]].sum() == 0
    assert chi_square_pvalue(counts, (weights / weights.sum()).numpy()) > P_MIN


def test_the_race_needs_no_normalisation():
    gen = torch.Generator().manual_seed(3)
    weights = random_rows(gen, (50, 9), zeros=3)
    keys = race_keys(torch.rand(50, 9, generator=gen, dtype=torch.float64))
    assert torch.equal(race(weights, keys), race(weights * 0.0123, keys))


def test_a_zero_uniform_never_draws_a_token_of_weight_zero_nor_makes_a_nan():
    """u = 0 is an infinite exponential in exact arithmetic: its token loses the race; taken as the smallest
    positive float64, every key stays finite, so no 0/0 arises and a positive weight always beats a zero one."""
    weights = torch.tensor([0.0, 0.3, 0.7, 0.0])
    assert torch.isfinite(race_keys(torch.zeros(4, dtype=torch.float64))).all()
    assert int(race(weights, race_keys(torch.zeros(4, dtype=torch.float64)))) == 2  # all zero: the largest weight
    u = torch.tensor([0.0, 0.0, 0.9, 0.0], dtype=torch.float64)  # zeros on both zero-weight tokens and on token 1
    assert int(race(weights, race_keys(u))) in (1, 2)


def test_a_row_without_mass_races_no_token():
    rows = torch.stack([torch.full((4,), float("nan")), torch.zeros(4)])
    keys = race_keys(torch.full((2, 4), 0.5, dtype=torch.float64))
    assert race(rows, keys).tolist() == [NO_TOKEN, NO_TOKEN]


# ----------------------------------------------------------------------------- the vectorised verify


def forced_uniforms(accept, n, gamma, vocab):
    """Uniforms inside the regions that accept positions < n and reject position n (u_n = (1 + a_n) / 2), then V for
    the race."""
    u = [a / 2 for a in accept[:n]]
    if n < gamma:
        u.append((1 + accept[n]) / 2)
    return torch.tensor(u + [0.5] * (gamma + vocab - len(u)), dtype=torch.float64)


def test_verify_round_by_exact_enumeration_gives_the_target_law_of_each_emitted_token():
    """gamma = 3, V = 3, prefix-dependent tables: for every draft sequence and every stop n, uniforms inside
    that branch's region make the round stop at n, keep the drafts before it and correct from the oracle's
    residual (or the next target row); the branches weighted by the oracle's masses give P(first 4 tokens)
    = the product of the target's conditionals."""
    vocab, gamma, horizon = 3, 3, 4
    gen = torch.Generator().manual_seed(7)
    tables_t = {pre: random_rows(gen, (vocab,)) for n in range(horizon + gamma + 1)
                for pre in itertools.product(range(vocab), repeat=n)}
    tables_d = {pre: random_rows(gen, (vocab,)) for pre in tables_t}

    def one_round(prefix):
        law = {}
        for drafts in itertools.product(range(vocab), repeat=gamma):
            q = torch.stack([tables_d[prefix + drafts[:i]] for i in range(gamma)])      # [gamma, V]
            p = torch.stack([tables_t[prefix + drafts[:i]] for i in range(gamma + 1)])  # [gamma+1, V]
            pn, qn = p.numpy(), q.numpy()
            accept = [float(oracle_accept(pn[i, x], qn[i, x])) for i, x in enumerate(drafts)]
            weight = float(np.prod([qn[i, x] for i, x in enumerate(drafts)]))
            for n in range(gamma + 1):
                stop = 1.0 if n == gamma else 1 - accept[n]
                if weight * stop > 0:
                    out = verify_round(p, q, torch.tensor(drafts), forced_uniforms(accept, n, gamma, vocab))
                    assert int(out.n_accepted) == n and out.tokens[:n].tolist() == list(drafts[:n])
                    final = pn[gamma] if n == gamma else oracle_residual(pn[n], qn[n])
                    np.testing.assert_allclose(out.final_probs.numpy(), final, atol=1e-12)
                    for x in range(vocab):
                        key = drafts[:n] + (x,)
                        law[key] = law.get(key, 0.0) + weight * stop * final[x]
                if n < gamma:
                    weight *= accept[n]
        return law

    rounds, law = {}, {(): 1.0}
    while any(len(seq) < horizon for seq in law):
        nxt = {}
        for seq, mass in law.items():
            if len(seq) >= horizon:
                nxt[seq] = nxt.get(seq, 0.0) + mass
                continue
            rounds.setdefault(seq, one_round(seq))
            for emitted, m in rounds[seq].items():
                key = (seq + emitted)[:horizon]
                nxt[key] = nxt.get(key, 0.0) + mass * m
        law = nxt
    for seq in itertools.product(range(vocab), repeat=horizon):
        expected = np.prod([float(tables_t[seq[:i]][seq[i]]) for i in range(horizon)])
        assert law.get(seq, 0.0) == pytest.approx(expected, abs=1e-9)


def test_a_uniform_equal_to_the_accept_chance_rejects_and_chance_zero_is_never_kept():
    target = torch.tensor([[0.0, 0.5, 0.5], [0.25, 0.25, 0.5], [1 / 3, 1 / 3, 1 / 3]], dtype=torch.float64)
    draft = torch.tensor([[0.5, 0.25, 0.25], [0.5, 0.25, 0.25]], dtype=torch.float64)
    race_u = [0.5, 0.5, 0.5]
    out = verify_round(target, draft, torch.tensor([0, 0]), torch.tensor([0.0, 0.0, *race_u], dtype=torch.float64))
    assert int(out.n_accepted) == 0 and int(out.last) in (1, 2)  # p(0) = 0: u = 0 does not keep it
    out = verify_round(target, draft, torch.tensor([1, 0]), torch.tensor([0.3, 0.5, *race_u], dtype=torch.float64))
    assert int(out.n_accepted) == 1  # u = 0.5 = accept chance p/q = 0.25/0.5 at position 1: rejected
    assert out.tokens.tolist()[:2] == [1, int(out.last)] and out.tokens.tolist()[2] == NO_TOKEN


def test_every_result_is_a_tensor_on_the_probabilities_device():
    gen = torch.Generator().manual_seed(2)
    out = verify_round(random_rows(gen, (4, 5)), random_rows(gen, (3, 5)), torch.tensor([1, 2, 3]),
                       round_uniforms(3, 5, gen, "cpu"))
    assert out.n_accepted.dim() == 0 and out.n_accepted.dtype == torch.long
    assert out.tokens.shape == (4,) and out.tokens.dtype == torch.long
    assert out.accept_probs.shape == out.accepted.shape == out.drafted_target_probs.shape == (3,)
    assert out.final_probs.shape == (5,) and out.drafted_kl is None


def test_round_uniforms_are_one_draw_of_gamma_plus_the_vocabulary():
    a = round_uniforms(4, 9, torch.Generator().manual_seed(3), "cpu")
    b = torch.rand(13, generator=torch.Generator().manual_seed(3), dtype=torch.float64)
    assert torch.equal(a, b)


@pytest.mark.parametrize("seed", [0, 1])
def test_first_emitted_token_of_seeded_rounds_is_distributed_as_the_target(seed):
    """N = 200,000 rounds, gamma = 2, V = 8 (two target zeros), drafts drawn from q, in one batched verify_round call:
    chi-square of the first emitted token against the target's first row, p > 1e-3 (at most 6 bins: catches
    w >= 0.012 with power 0.9; the former 20,000 one-by-one rounds caught w >= 0.037)."""
    gen = torch.Generator().manual_seed(40 + seed)
    target = random_rows(gen, (3, 8), zeros=2).float()
    draft = random_rows(gen, (2, 8)).float()
    counts = bulk.first_tokens(target, draft, 200_000, seed=40 + seed)
    assert chi_square_pvalue(counts, target[0].double().numpy()) > P_MIN


def test_a_batch_of_rounds_decides_each_round_as_alone():
    """The bulk laws rest on this: verify_round over [N, ...] gives, round by round, what N single calls give."""
    gen = torch.Generator().manual_seed(11)
    target, draft = random_rows(gen, (50, 4, 7), zeros=1), random_rows(gen, (50, 3, 7))
    drafts = torch.multinomial(draft.reshape(-1, 7), 1, generator=gen).reshape(50, 3)
    uniforms = torch.rand(50, 3 + 7, generator=gen, dtype=torch.float64)
    batched = verify_round(target, draft, drafts, uniforms)
    for i in range(50):
        alone = verify_round(target[i], draft[i], drafts[i], uniforms[i])
        assert torch.equal(batched.tokens[i], alone.tokens) and torch.equal(batched.final_probs[i], alone.final_probs)
        assert torch.equal(batched.accept_probs[i], alone.accept_probs) and int(batched.n_accepted[i]) == int(alone.n_accepted)


def test_first_emitted_token_of_mentored_rounds_follows_the_plans_output_law():
    """N = 200,000 rounds at a KL budget of 0.05 nats, gamma = 1, V = 6, in one call: the first token follows
    Tran-Thien's pi = q r + s (1 - sum q r), computed here in numpy from the plan's r and s; p > 1e-3 (at most 6 bins:
    catches w >= 0.012 with power 0.9; the former 20,000 rounds caught w >= 0.037)."""
    gen = torch.Generator().manual_seed(9)
    target, draft = random_rows(gen, (2, 6)), random_rows(gen, (1, 6))
    plan = mentored_plan(target[:1], draft, 0.05)
    q, r, s = draft[0].numpy(), plan.accept_probs[0].numpy(), plan.resample_probs[0].numpy()
    expected = q * r + s * (1 - (q * r).sum())
    counts = bulk.first_tokens(target, draft, 200_000, seed=9, kl_budget=0.05, plan=plan)
    assert chi_square_pvalue(counts, expected) > P_MIN


# ----------------------------------------------------------------------------- one read


def test_pack_reads_every_tensor_back_in_one_host_read(monkeypatch):
    reads = []
    original = torch.Tensor.tolist
    monkeypatch.setattr(torch.Tensor, "tolist", lambda self: reads.append(1) or original(self))
    packed = pack(n=torch.tensor(2), tokens=torch.tensor([5, 7, -1]), ok=torch.tensor([True, False]),
                  bars=torch.tensor([[0.5, 0.25], [0.125, 0.0625]]))
    assert packed.read() == {"n": 2, "tokens": [5, 7, -1], "ok": [1, 0], "bars": [[0.5, 0.25], [0.125, 0.0625]]}
    assert len(reads) == 1
