"""The what-if maths: acceptance length and speedup from a per-position curve, against direct enumeration
of accept/reject patterns, Leviathan's closed forms, and seeded simulation of real speculative sampling."""
from __future__ import annotations

import itertools
import math

import numpy as np
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
    assert all(set(r) == {"gamma", "drafts", "acceptance_length", "tokens_per_round", "speedup",
                          "speedup_forwards_only", "speedup_thm38", "verify_cost", "verify_cost_extrapolated",
                          "host_cost"} for r in result["table"])
    assert all(r["tokens_per_round"] is None and r["host_cost"] == 0 and r["speedup"] == r["speedup_forwards_only"]
               for r in result["table"])  # nothing measured beyond the forwards: the forwards' model
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


# ---------------------------------------------------------------- the verify's measured cost V(n)

def simulated_round_speedup(conditional: list[float], gamma: int, c: float, verify_costs: list[float], rounds: int,
                            seed: int) -> float:
    """The oracle, written out here: `rounds` rounds where draft i is kept with chance b_i until the first rejection
    (plus one token), each costing gamma draft forwards of c and a target pass of V(gamma + 1), against a target alone
    at 1 a token (numpy; no specviz code)."""
    rng = np.random.default_rng(seed)
    kept = rng.random((rounds, gamma)) < np.array(conditional[:gamma])     # [rounds, gamma]
    tokens = np.cumprod(kept, axis=1).sum() + rounds
    return float(tokens / (rounds * (gamma * c + verify_costs[gamma])))


def test_the_table_prices_each_verify_with_the_planted_curve_as_a_seeded_simulation_does():
    """A per-position curve with falling rates, c 0.1 and a planted V(2..7); 100,000 simulated rounds per γ (relative
    error under 0.3%), 2% tolerance: the table's speedup agrees at every γ and Thm 3.8's beside it, which takes
    V = 1, is 12% to 60% above the simulation, so the table cannot be using it."""
    conditional = [0.85, 0.8, 0.75, 0.7, 0.65, 0.6]
    curve = list(itertools.accumulate(conditional, lambda a, b: a * b))
    planted = [1.0, 1.12, 1.25, 1.38, 1.52, 1.66, 1.8]
    result = whatif.whatif_table(curve, 0.1, [1, 2, 3, 4, 5, 6], verify_costs=planted)
    for row in result["table"]:
        simulated = simulated_round_speedup(conditional, row["gamma"], 0.1, planted, 100_000, seed=row["gamma"])
        assert row["verify_cost"] == planted[row["gamma"]] and not row["verify_cost_extrapolated"]
        assert row["speedup"] == pytest.approx(simulated, rel=0.02)
        assert row["speedup_thm38"] > 1.1 * simulated


def test_a_curve_shorter_than_the_gammas_goes_on_as_a_line_and_says_so():
    result = whatif.whatif_table([0.8], 0.1, [2, 5], verify_costs=[1.0, 1.2, 1.4])
    short, long = result["table"]
    assert short["verify_cost"] == pytest.approx(1.4) and not short["verify_cost_extrapolated"]
    assert long["verify_cost"] == pytest.approx(1.4 + 3 * 0.2) and long["verify_cost_extrapolated"]


def test_without_a_curve_the_table_is_thm_3_8s():
    result = whatif.whatif_table([0.8, 0.6], 0.2, [1, 2])
    assert all(r["verify_cost"] == 1.0 and r["speedup"] == r["speedup_thm38"] for r in result["table"])
    assert result["verify_costs"] is None


@pytest.mark.parametrize("bad,match", [([1.2, 1.3], "starts at V\\(1\\) = 1"), ([1.0], "at least V\\(2\\)"),
                                       ([1.0, -0.5], "V\\(2\\) must be a number in \\(0, 100\\]"),
                                       ([1.0, 1e308], "V\\(2\\) must be a number in")])
def test_a_bad_verify_curve_is_named(bad, match):
    with pytest.raises(ValueError, match=match):
        whatif.whatif_table([0.8], 0.1, [1], verify_costs=bad)


def simulated_requests(conditional: list[float], gamma: int, max_new_tokens: int, requests: int, seed: int) -> float:
    """Tokens per round over seeded requests of `max_new_tokens`, each round's Bernoulli(b_i) tests drawn in bulk
    and its tokens kept up to the budget: N / (rounds a request took, on average)."""
    rng = np.random.default_rng(seed)
    per_round = max_new_tokens + 1  # more rounds than any request can need (each emits at least one token)
    kept = rng.random((requests, per_round, gamma)) < np.array(conditional[:gamma])     # [requests, rounds, gamma]
    emitted = np.cumprod(kept, axis=2).sum(axis=2) + 1                                # [requests, rounds]
    rounds = (np.cumsum(emitted, axis=1) < max_new_tokens).sum(axis=1) + 1            # rounds until N is reached
    return max_new_tokens / float(rounds.mean())


def test_the_last_round_cut_at_the_budget_agrees_with_seeded_requests():
    """40,000 simulated requests of 48 tokens per γ (the mean rounds' relative s.e. under 0.15%), 0.5% tolerance:
    the budget's cut costs up to 5% of the tokens a round at γ 8 (acceptance_length is that far above), so the
    uncut length would fail where the cut one passes."""
    conditional = [0.87, 0.85, 0.85, 0.88, 0.86, 0.84, 0.9, 0.88]
    curve = list(itertools.accumulate(conditional, lambda a, b: a * b))
    for gamma in (1, 4, 8):
        simulated = simulated_requests(conditional, gamma, 48, 40_000, seed=gamma)
        cut = whatif.tokens_per_round_within(curve[:gamma], 48)
        assert cut == pytest.approx(simulated, rel=0.005)
        if gamma == 8:
            assert whatif.acceptance_length(curve, gamma) > 1.03 * simulated


def test_the_budget_cut_by_hand():
    assert whatif.tokens_per_round_within([1.0], 3) == pytest.approx(1.5)       # 2 + 1 kept of 2 rounds' 4
    assert whatif.tokens_per_round_within([0.0, 0.0], 5) == pytest.approx(1.0)  # every round emits one token
    assert whatif.tokens_per_round_within([0.5], 1) == pytest.approx(1.0)       # one token asked: one round
    assert whatif.length_distribution([0.9, 0.63]) == pytest.approx([0.1, 0.27, 0.63])
    with pytest.raises(ValueError, match="max_new_tokens"):
        whatif.tokens_per_round_within([0.5], 0)


def test_the_rounds_host_work_and_the_forwards_share_enter_the_speedup_as_written():
    """S = L_N / (γ c + f V + h): worked by hand for γ 2, c 0.25, V(3) 1.2, f 0.95, h 0.1 + 0.02 γ, N 10."""
    curve = [0.8, 0.6]
    result = whatif.whatif_table(curve, 0.25, [2], verify_costs=[1.0, 1.1, 1.2], host_cost=[0.1, 0.02],
                                 forward_share=0.95, max_new_tokens=10)
    row = result["table"][0]
    rounds = {0: 0.0}
    for n in range(1, 11):  # P(L = 1, 2, 3) = 0.2, 0.2, 0.6
        rounds[n] = 1 + 0.2 * rounds[max(0, n - 1)] + 0.2 * rounds[max(0, n - 2)] + 0.6 * rounds[max(0, n - 3)]
    assert row["tokens_per_round"] == pytest.approx(10 / rounds[10])
    assert row["host_cost"] == pytest.approx(0.14)
    assert row["speedup"] == pytest.approx(10 / rounds[10] / (0.5 + 0.95 * 1.2 + 0.14))
    assert row["speedup_forwards_only"] == pytest.approx(2.4 / (0.5 + 1.2))
    assert row["speedup_thm38"] == pytest.approx(2.4 / 1.5)


@pytest.mark.parametrize("host,share,match", [([-0.1], 1.0, "--host-cost"), ([0.1, 0.2, 0.3], 1.0, "--host-cost"),
                                              ([float("nan")], 1.0, "--host-cost"), ([0.1], 0.0, "--forward-share"),
                                              ([0.1], 11.0, "--forward-share"), ([0.1], True, "--forward-share")])
def test_a_bad_round_cost_is_named(host, share, match):
    with pytest.raises(ValueError, match=match):
        whatif.whatif_table([0.8], 0.1, [1], host_cost=host, forward_share=share)


def test_a_pass_slower_than_the_baseline_step_is_priced_as_measured():
    """f above 1 (the baseline's step faster than the timed pass, as with a baseline on graphs) is kept: 2.4 tokens
    over 0.5 + 1.2 V(3) of 1.2 = 2.4 / 1.94."""
    row = whatif.whatif_table([0.8, 0.6], 0.25, [2], verify_costs=[1.0, 1.1, 1.2], forward_share=1.2)["table"][0]
    assert row["speedup"] == pytest.approx(2.4 / (0.5 + 1.2 * 1.2))


def test_a_drafting_line_replaces_gamma_c():
    """A report's drafting 0.3 + 0.1 γ target-only steps: at γ 2 the round's drafting is 0.5, not 2 c = 0.2."""
    row = whatif.whatif_table([0.8, 0.6], 0.1, [2], drafting=[0.3, 0.1])["table"][0]
    assert row["speedup"] == pytest.approx(2.4 / (0.5 + 1.0)) and row["speedup_forwards_only"] == pytest.approx(2.4 / 1.2)


def test_each_requests_rounds_by_its_own_length():
    """Rounds that always emit 2 tokens (a_1 = 1, γ 1): a 5-token request takes 3 rounds, a 4-token one 2."""
    assert whatif.rounds_to_emit([1.0], [5, 4, 1]) == pytest.approx([3.0, 2.0, 1.0])
    with pytest.raises(ValueError, match="request lengths"):
        whatif.rounds_to_emit([1.0], [0])
