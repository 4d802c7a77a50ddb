"""Property tests (hypothesis) over shapes and values of the sampling core."""
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from specviz.core.sampling import mentored_plan, residual_distribution, verify


@st.composite
def rounds(draw):
    gamma = draw(st.integers(1, 6))
    vocab = draw(st.integers(2, 40))
    seed = draw(st.integers(0, 2**31 - 1))
    sparsity = draw(st.sampled_from([0.0, 0.5, 0.9]))
    gen = torch.Generator().manual_seed(seed)

    def probs(rows):
        x = torch.rand(rows, vocab, generator=gen) ** 4
        x = x * (torch.rand(rows, vocab, generator=gen) >= sparsity)
        x[torch.arange(rows), torch.randint(0, vocab, (rows,), generator=gen)] += 1e-3  # keep a row non-empty
        return x / x.sum(-1, keepdim=True)

    target, draft = probs(gamma + 1), probs(gamma)
    tokens = torch.multinomial(draft, 1, generator=gen).squeeze(-1)
    budget = draw(st.sampled_from([0.0, 0.01, 0.3, 5.0]))
    return target, draft, tokens, budget, seed


@settings(max_examples=150, deadline=None)
@given(rounds())
def test_verify_output_is_well_formed(case):
    target, draft, tokens, budget, seed = case
    out = verify(target, draft, tokens, kl_budget=budget, generator=torch.Generator().manual_seed(seed))
    gamma, vocab = draft.shape
    assert 0 <= out.n_accepted <= gamma
    assert len(out.tokens) == out.n_accepted + 1
    assert out.tokens[:-1] == tokens[: out.n_accepted].tolist()
    assert all(0 <= x < vocab for x in out.tokens)
    assert out.n_examined == min(out.n_accepted + 1, gamma)
    assert ((out.accept_probs >= 0) & (out.accept_probs <= 1)).all()
    assert abs(out.final_probs.sum().item() - 1) < 1e-4 and (out.final_probs >= 0).all()
    assert out.final_probs[out.tokens[-1]] > 0


@settings(max_examples=150, deadline=None)
@given(rounds())
def test_residual_and_plan_stay_normalised(case):
    target, draft, _, budget, _ = case
    residual = residual_distribution(target[:-1], draft)
    assert torch.allclose(residual.sum(-1), torch.ones(len(draft)), atol=1e-5)
    plan = mentored_plan(target[:-1], draft, budget)
    assert torch.allclose(plan.output_probs.sum(-1), torch.ones(len(draft)), atol=1e-5)
    assert torch.allclose(plan.resample_probs.sum(-1), torch.ones(len(draft)), atol=1e-5)
    assert ((plan.accept_probs >= 0) & (plan.accept_probs <= 1 + 1e-6)).all()
    assert (plan.kl <= budget * 1.01 + 1e-5).all()
