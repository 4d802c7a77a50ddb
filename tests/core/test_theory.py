"""specviz.theory: Leviathan et al.'s expected tokens per call and speedup (Eq. 1, Thm 3.8)."""
import pytest

from specviz.core.theory import expected_speedup, expected_tokens_per_target_call, optimal_gamma


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
