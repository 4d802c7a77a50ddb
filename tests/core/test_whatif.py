"""The what-if maths: acceptance length and speedup from a per-position curve, against direct enumeration
of accept/reject patterns, Leviathan's closed forms, and seeded simulation of real speculative sampling."""
from __future__ import annotations

import itertools
import math

import pytest
import torch

from specviz.core import sampling, whatif


def enumerated_length(conditional: list[float], gamma: int) -> float:
    """E[tokens per round] by summing over every accept/reject pattern of gamma Bernoulli(b_i) tests:
    the round keeps the drafts before the first rejection, plus one resampled or bonus token."""
    total = 0.0
    for pattern in itertools.product((True, False), repeat=gamma):
        chance = math.prod(b if ok else 1 - b for b, ok in zip(conditional, pattern))
        kept = next((i for i, ok in enumerate(pattern) if not ok), gamma)
        total += chance * (kept + 1)
    return total


def test_acceptance_length_matches_enumeration_of_accept_patterns():
    conditional = [0.9, 0.7, 0.8, 0.5, 0.6]
    curve = [0.9, 0.63, 0.504, 0.252, 0.1512]  # a_i = b_1 ... b_i, written out
    for gamma in range(1, 6):
        assert whatif.acceptance_length(curve, gamma) == pytest.approx(enumerated_length(conditional, gamma), abs=1e-12)


def test_constant_rate_gives_leviathan_eq1_and_thm38():
    alpha, c = 0.8, 0.15
    for gamma in (1, 3, 7):
        curve = [alpha ** i for i in range(1, gamma + 1)]
        tokens = (1 - alpha ** (gamma + 1)) / (1 - alpha)  # Eq. (1)
        assert whatif.acceptance_length(curve, gamma) == pytest.approx(tokens)
        assert whatif.speedup(tokens, gamma, c) == pytest.approx(tokens / (gamma * c + 1))  # Thm 3.8


def test_conditional_and_unconditional_rates_convert_both_ways():
    curve = [0.9, 0.72, 0.36, 0.0, 0.0]
    conditional = whatif.conditional_from_unconditional(curve)
    assert conditional == pytest.approx([0.9, 0.8, 0.5, 0.0, 0.0])
    assert whatif.unconditional_from_conditional(conditional) == pytest.approx(curve)


def test_beyond_the_measured_positions_the_last_conditional_rate_continues():
    assert whatif.extend([0.8, 0.4], 4) == pytest.approx([0.8, 0.4, 0.2, 0.1])


def test_a_rising_curve_is_refused_with_the_flag_name():
    with pytest.raises(ValueError, match="--per-position must not rise"):
        whatif.acceptance_length([0.6, 0.9], 2)
    with pytest.raises(ValueError, match=r"--per-position takes rates in \[0, 1\]"):
        whatif.acceptance_length([1.2], 1)


def test_several_drafts_combine_the_first_try_and_the_sibling_rates():
    # depth accepted unless the first try (b) and every sibling (s_1, s_2) fail
    curve = whatif.with_drafts([0.5, 0.25], 2, 3, [0.4, 0.2])
    depth = 1 - 0.5 * 0.6 * 0.8
    assert curve == pytest.approx([depth, depth ** 2])
    with pytest.raises(ValueError, match="--sibling-rates"):
        whatif.with_drafts([0.5], 1, 3, [0.4])


def test_best_row_and_table_keys():
    result = whatif.whatif_table([0.9, 0.8, 0.7], 0.2, [1, 2, 3], [1, 2], [0.3], extra_row_cost=0.5)
    assert all(set(r) == {"gamma", "drafts", "acceptance_length", "speedup"} for r in result["table"])
    assert len(result["table"]) == 6
    assert result["best"] == max(result["table"], key=lambda r: r["speedup"])


def simulate(target: torch.Tensor, draft: torch.Tensor, gamma: int, rounds: int, seed: int) -> list[int]:
    """Accepted drafts per round of real speculative sampling (`sampling.verify`) with a context-free toy:
    position i has its own target row target[i] and draft row draft[i]."""
    generator = torch.Generator().manual_seed(seed)
    out = []
    for _ in range(rounds):
        tokens = torch.tensor([sampling.sample(draft[i], generator) for i in range(gamma)])
        result = sampling.verify(target[: gamma + 1], draft[:gamma], tokens, generator=generator)
        out.append(result.n_accepted)
    return out


def test_a_gamma_4_simulation_predicts_gamma_2_and_the_conditional_form_would_not():
    # 2000 rounds each; tolerance 3 standard errors of the gamma-2 mean (about 0.06 tokens)
    generator = torch.Generator().manual_seed(3)
    target = torch.softmax(torch.randn(5, 12, generator=generator) * 2, -1)  # [gamma+1, V]
    draft = torch.softmax(torch.randn(5, 12, generator=generator) * 2, -1)
    accepted4 = simulate(target, draft, 4, 2000, seed=1)
    curve = [sum(n >= i for n in accepted4) / len(accepted4) for i in range(1, 5)]  # vLLM's per-position form
    lengths2 = [n + 1 for n in simulate(target, draft, 2, 2000, seed=2)]
    mean = sum(lengths2) / len(lengths2)
    se = math.sqrt(sum((x - mean) ** 2 for x in lengths2) / (len(lengths2) - 1) / len(lengths2))
    assert abs(whatif.acceptance_length(curve, 2) - mean) < 3 * se
    # the exact value from the per-position overlaps sum min(p_i, q_i)
    overlap = torch.minimum(target, draft).sum(-1).tolist()
    assert whatif.acceptance_length(curve, 2) == pytest.approx(1 + overlap[0] + overlap[0] * overlap[1], abs=0.03)
    # reading the conditional rates as if they were vLLM's unconditional ones over-predicts here
    misread = whatif.conditional_from_unconditional(curve)[:2]
    assert 1 + sum(misread) - mean > 10 * se
