"""specviz.theory: Leviathan et al.'s expected tokens per call and speedup (Eq. 1, Thm 3.8)."""
import numpy as np
import pytest

from specviz.core.theory import (
    breakeven_alpha,
    expected_speedup,
    expected_tokens_per_target_call,
    optimal_gamma,
    optimal_gamma_with_verify_costs,
    speedup_with_verify_cost,
)


def test_tokens_per_call_matches_closed_form():
    alpha, gamma = 0.8, 4
    assert expected_tokens_per_target_call(alpha, gamma) == pytest.approx((1 - alpha ** 5) / (1 - alpha))


def test_extreme_acceptance_rates_do_not_divide_by_zero():
    assert expected_tokens_per_target_call(1.0, 4) == 5.0
    assert expected_tokens_per_target_call(0.0, 4) == 1.0
    assert expected_speedup(1.0, 4, 0.0) == 5.0


def test_speedup_matches_theorem_3_8():
    alpha, gamma, c = 0.7, 3, 0.1
    assert expected_speedup(alpha, gamma, c) == pytest.approx((1 - alpha ** 4) / ((1 - alpha) * (gamma * c + 1)))


def test_optimal_gamma_grows_with_acceptance_and_shrinks_with_cost():
    assert optimal_gamma(0.9, 0.05) > optimal_gamma(0.6, 0.05)
    assert optimal_gamma(0.8, 0.5) < optimal_gamma(0.8, 0.01)
    best = optimal_gamma(0.8, 0.1)
    assert all(expected_speedup(0.8, best, 0.1) >= expected_speedup(0.8, g, 0.1) for g in range(1, 17))


@pytest.mark.parametrize("args", [(-0.1, 3), (1.1, 3), (0.5, -1), (0.5, 1.5)])
def test_out_of_range_arguments_raise(args):
    with pytest.raises(ValueError):
        expected_tokens_per_target_call(*args)


def test_an_underflowed_p_value_never_reads_zero():
    from specviz.core.notation import p_value_text

    assert p_value_text(0.0) == "< 1e-300" and p_value_text(5e-324) == "< 1e-300"
    assert p_value_text(0.0123) == "0.0123"


# ---------------------------------------------------------------- a verify's measured cost V(n)

def simulated_speedup(alpha: float, gamma: int, c: float, verify_costs: list[float], rounds: int, seed: int) -> float:
    """The oracle, written out here and sharing no code with specviz: `rounds` rounds with each draft kept with
    chance alpha until the first rejection (one token more for the resampled or bonus token), each round costing
    gamma draft forwards of c and one target pass over gamma + 1 positions of V(gamma + 1), against a target
    alone costing 1 a token."""
    rng = np.random.default_rng(seed)
    kept = rng.random((rounds, gamma)) < alpha                      # [rounds, gamma]
    accepted = np.cumprod(kept, axis=1).sum(axis=1)                 # drafts kept before the first rejection
    tokens = accepted.sum() + rounds
    seconds = rounds * (gamma * c + verify_costs[gamma])            # verify_costs[n - 1] is V(n)
    return float(tokens / seconds)


PLANTED_V = [1.0, 1.12, 1.25, 1.38, 1.52, 1.66, 1.8, 1.95, 2.1]    # V(1)..V(9), a CPU-like curve


@pytest.mark.parametrize("alpha,gamma,c", [(0.33, 4, 0.09), (0.7, 3, 0.1), (0.9, 8, 0.05), (0.5, 1, 0.3)])
def test_speedup_with_verify_cost_matches_a_seeded_simulation_with_planted_costs(alpha, gamma, c):
    """200,000 simulated rounds per case: the mean tokens per round has a relative standard error under 0.3%, so a
    2% tolerance is over 6σ; the smallest fault it catches is a 2% bias in the cost model, far below what taking
    V = 1 instead of the planted V(γ + 1) (12% to 110% here) or γ instead of γ + 1 positions makes."""
    simulated = simulated_speedup(alpha, gamma, c, PLANTED_V, 200_000, seed=gamma)
    assert speedup_with_verify_cost(alpha, gamma, c, PLANTED_V[gamma]) == pytest.approx(simulated, rel=0.02)


def test_a_verify_that_costs_one_forward_is_theorem_3_8():
    assert speedup_with_verify_cost(0.7, 3, 0.1, 1.0) == pytest.approx(expected_speedup(0.7, 3, 0.1))


def test_the_best_gamma_under_a_planted_curve_is_the_simulation_s_best():
    """Each γ's simulated speed-up (100,000 rounds, < 0.3% error) ordered as the prediction orders them: at α 0.7,
    c 0.05 the planted curve moves the best γ from Thm 3.8's 6 down to 3 (2% ahead of γ 2 and 4), and the simulation
    agrees."""
    alpha, c = 0.7, 0.05
    simulated = {g: simulated_speedup(alpha, g, c, PLANTED_V, 100_000, seed=g) for g in range(1, 9)}
    best = optimal_gamma_with_verify_costs(alpha, c, PLANTED_V)
    assert best == max(simulated, key=simulated.get) == 3
    assert optimal_gamma(alpha, c, 8) == 6


def test_breakeven_alpha_is_where_the_simulated_round_starts_to_pay():
    """At γ 4, c 0.09, V(5) 1.6 a round costs 1.96 passes: it pays above α ≈ 0.51 (1 + α + … + α⁴ = 1.96); the
    simulation (100,000 rounds) is slower 0.03 below and faster 0.03 above."""
    edge = breakeven_alpha(4, 0.09, 1.6)
    assert 1 + edge + edge ** 2 + edge ** 3 + edge ** 4 == pytest.approx(1.96, abs=1e-9)
    curve = [1.0] * 4 + [1.6]
    assert simulated_speedup(edge - 0.03, 4, 0.09, curve, 100_000, seed=1) < 1.0
    assert simulated_speedup(edge + 0.03, 4, 0.09, curve, 100_000, seed=2) > 1.0


def test_breakeven_alpha_at_the_ends():
    assert breakeven_alpha(2, 0.0, 1.0) == 0.0            # free drafts, a free verify: any α pays
    assert breakeven_alpha(1, 0.6, 1.5) is None           # 2 tokens at most for 2.1 passes: never pays


@pytest.mark.parametrize("bad", [0.0, -1.0, float("nan"), float("inf")])
def test_a_verify_cost_must_be_a_positive_number(bad):
    with pytest.raises(ValueError, match="verify_cost"):
        speedup_with_verify_cost(0.5, 2, 0.1, bad)
