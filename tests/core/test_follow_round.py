"""specviz.core.sampling.follow_round: a round of a certain draft (q one-hot, prompt lookup) decided by a text drawn
from the target has the exact rule's law: the same joint law of how many drafts are kept and which tokens are
emitted (exact enumeration over every text, against Leviathan et al.'s Alg. 1 at a one-hot q written out here);
and at a q that is not certain it keeps fewer drafts than the exact rule (what the decoder refuses)."""
from __future__ import annotations

import itertools

import pytest
import torch

from specviz.core.sampling import follow_round, round_uniforms, verify_round

VOCAB, GAMMA = 3, 2


def random_row(gen: torch.Generator) -> torch.Tensor:
    """A Dirichlet(1) row: normalised exponentials."""
    e = -torch.rand(VOCAB, generator=gen, dtype=torch.float64).log()
    return e / e.sum()


def chain_tables(seed: int) -> dict:
    """The target's next-token row after every prefix of up to GAMMA tokens (the round starts at the empty one)."""
    gen = torch.Generator().manual_seed(seed)
    return {pre: random_row(gen) for n in range(GAMMA + 1) for pre in itertools.product(range(VOCAB), repeat=n)}


def followed_law(tables: dict, drafts: tuple, draft_probs: torch.Tensor) -> dict:
    """{(n kept, emitted tokens): chance} of follow_round over every text the target chain can draw, all at once (a
    batch of VOCAB ** (GAMMA + 1) texts, each weighted by its chance under the chain)."""
    texts = list(itertools.product(range(VOCAB), repeat=GAMMA + 1))
    rows = torch.stack([tables[drafts[:i]] for i in range(GAMMA + 1)])                   # [gamma+1, V] at the drafts
    batch = len(texts)
    gen = torch.Generator().manual_seed(11)
    uniforms = torch.stack([round_uniforms(GAMMA, VOCAB, gen, "cpu") for _ in texts])     # drawn, then set aside
    sampled = verify_round(rows.expand(batch, GAMMA + 1, VOCAB), draft_probs.expand(batch, GAMMA, VOCAB),
                           torch.tensor(drafts).expand(batch, GAMMA), uniforms)
    out = follow_round(sampled, torch.tensor(texts))
    law: dict = {}
    for text, n, last in zip(texts, out.n_accepted.tolist(), out.last.tolist()):
        chance = 1.0
        for i, y in enumerate(text):
            chance *= float(tables[text[:i]][y])  # the chain's own rows, off the drafts too
        key = (n, drafts[:n] + (last,))
        law[key] = law.get(key, 0.0) + chance
    return law


def exact_rule_law(tables: dict, drafts: tuple) -> dict:
    """Leviathan et al. Alg. 1 at q one-hot on `drafts`: x_i kept with chance min(1, p(x_i) / 1), a rejection's token
    from norm(max(0, p - q)) (p without x_i), the bonus from p's next row; {(n kept, emitted tokens): chance}."""
    law, reach = {}, 1.0
    for n in range(GAMMA + 1):
        p = tables[drafts[:n]]
        if n == GAMMA:
            for y in range(VOCAB):
                law[(n, drafts + (y,))] = reach * float(p[y])
            break
        keep = float(p[drafts[n]])
        for y in range(VOCAB):
            if y != drafts[n]:
                law[(n, drafts[:n] + (y,))] = reach * (1 - keep) * float(p[y]) / (1 - keep)
        reach *= keep
    return law


def one_hot(drafts: tuple) -> torch.Tensor:
    return torch.nn.functional.one_hot(torch.tensor(drafts), VOCAB).double()             # [gamma, V]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_following_a_text_from_the_target_is_the_exact_rules_law_for_a_certain_draft(seed):
    """Every pair of drafts, every text: each (kept, emitted) outcome's chance equals the exact rule's to 1e-12."""
    tables = chain_tables(seed)
    for drafts in itertools.product(range(VOCAB), repeat=GAMMA):
        law, expected = followed_law(tables, drafts, one_hot(drafts)), exact_rule_law(tables, drafts)
        assert set(law) <= set(expected) and sum(law.values()) == pytest.approx(1.0, abs=1e-12)
        for key, chance in expected.items():
            assert law.get(key, 0.0) == pytest.approx(chance, abs=1e-12), (drafts, key)


def test_at_a_draft_law_that_is_not_certain_following_keeps_fewer_drafts_than_the_exact_rule():
    """A soft q: the exact rule keeps x_1 with chance min(1, p/q) > p(x_1); a followed text keeps it with chance p."""
    tables, drafts = chain_tables(0), (1, 2)
    soft = torch.full((GAMMA, VOCAB), 1 / VOCAB, dtype=torch.float64)                   # q(x) = 1/3 everywhere
    kept_first = sum(c for (n, _), c in followed_law(tables, drafts, soft).items() if n >= 1)
    p = float(tables[()][1])
    assert kept_first == pytest.approx(p, abs=1e-12) and kept_first < min(1.0, p * VOCAB) - 0.05


def test_the_text_decides_the_round_sampling_drew_and_keeps_its_accept_chances():
    """The uniforms were drawn (their cost paid) and set aside: the text keeps x_1 and rejects x_2 where u = 0 kept
    both; accepted marks where x_i is the text's token; accept_probs stays min(1, p/q) = p(x)."""
    rows = torch.tensor([[0.2, 0.5, 0.3], [0.6, 0.1, 0.3], [0.3, 0.3, 0.4]], dtype=torch.float64)
    uniforms = torch.zeros(GAMMA + VOCAB, dtype=torch.float64)                          # u = 0: sampling keeps both
    sampled = verify_round(rows, one_hot((1, 2)), torch.tensor([1, 2]), uniforms)
    out = follow_round(sampled, torch.tensor([1, 0, 2]))
    assert sampled.n_accepted.item() == 2 and out.n_accepted.item() == 1 and out.last.item() == 0
    assert out.accepted.tolist() == [True, False] and out.uniforms is uniforms
    assert out.accept_probs.tolist() == pytest.approx([0.5, 0.3])
    assert out.tokens.tolist()[:2] == [1, 0]
