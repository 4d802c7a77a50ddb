"""The playground: the decomposition is exact, Monte Carlo agrees with p, the wrong rules are caught."""
from __future__ import annotations

import pytest
import torch

from specviz.core import playground
from specviz.present import playground_figures
from tests.stats import chi_square_pvalue

P_MIN = 1e-3
N = 100_000  # rounds per simulation: the shortcuts' biases below are many standard errors wide at this size


@pytest.mark.parametrize("name", list(playground.TOY_PRESETS))
def test_accepted_plus_rejected_times_residual_is_the_target(name):
    dec = playground.decomposition(*playground.TOY_PRESETS[name])
    total = torch.tensor(dec["accepted"]) + torch.tensor(dec["rejected_times_residual"])
    assert torch.allclose(total, torch.tensor(dec["target"]), atol=1e-12)
    assert dec["acceptance_rate"] == pytest.approx(1 - dec["tv"])


@pytest.mark.parametrize("seed, name", list(enumerate(playground.TOY_PRESETS)))
def test_exact_rule_agrees_with_the_target(seed, name):
    """N = 100,000 seeded rounds; chi-square (ours and scipy's on the same counts) p > 1e-3;
    acceptance within 4 sigma of sum min(p, q)."""
    out = playground.simulate(*playground.TOY_PRESETS[name], N, "exact", seed)
    assert out["p_value"] > P_MIN
    if sum(x > 0 for x in out["expected"]) == 1:  # a one-hot target: every round must emit its token
        assert max(out["counts"]) == N
    else:
        assert out["p_value"] == pytest.approx(chi_square_pvalue(out["counts"], out["expected"]), rel=1e-6, abs=1e-12)
    expected = out["expected_acceptance_rate"]
    assert abs(out["acceptance_rate"] - expected) <= 4 * (expected * (1 - expected) / N) ** 0.5 + 1e-12


@pytest.mark.parametrize("variant, name", [
    ("resample-target", "overconfident draft"), ("resample-target", "underconfident draft"),
    ("keep-draft", "overconfident draft"), ("keep-draft", "underconfident draft"), ("keep-draft", "one-hot target"),
    ("keep-draft", "disjoint supports")])
def test_each_shortcut_is_caught_where_it_differs(variant, name):
    assert playground.simulate(*playground.TOY_PRESETS[name], N, variant, 1)["p_value"] < P_MIN


@pytest.mark.parametrize("name", ["one-hot target", "disjoint supports"])
def test_resampling_from_the_target_is_harmless_only_where_the_residual_is_the_target(name):
    """With a one-hot target or disjoint supports, norm(max(0, p - q)) == p: the shortcut is exact there."""
    target, draft = playground.TOY_PRESETS[name]
    assert playground.decomposition(target, draft)["residual"] == pytest.approx(playground.normalise(target, "t").tolist())
    assert playground.simulate(target, draft, N, "resample-target", 1)["p_value"] > P_MIN


@pytest.mark.parametrize("variant", [v for v in playground.VARIANTS if v != "greedy-match"])
def test_no_sampling_rule_is_blamed_when_p_equals_q(variant):
    assert playground.simulate(*playground.TOY_PRESETS["identical"], N, variant, 2)["p_value"] > P_MIN


def test_greedy_match_is_biased_even_when_p_equals_q():
    """Greedy decoding is not sampling: even a perfect draft cannot make it exact at T > 0."""
    assert playground.simulate(*playground.TOY_PRESETS["identical"], N, "greedy-match", 2)["p_value"] < P_MIN


def test_mentored_frontier_rises_and_starts_at_exact_decoding():
    out = playground.mentored(*playground.TOY_PRESETS["overconfident draft"], kl_budget=0.1)
    rates, kls = out["frontier"]["acceptance_rate"], out["frontier"]["kl"]
    assert rates[0] == pytest.approx(out["exact_acceptance_rate"], abs=1e-9) and kls[0] == pytest.approx(0, abs=1e-9)
    assert all(b >= a - 1e-9 for a, b in zip(rates, rates[1:]))
    assert all(k <= budget * 1.01 + 1e-9 for k, budget in zip(kls, out["frontier"]["budget"]))
    assert out["acceptance_rate"] > out["exact_acceptance_rate"] and out["kl"] <= 0.1 * 1.01


@pytest.mark.parametrize("target, draft, samples, variant, word", [
    ([0.5, -0.1, 0.6], [0.3, 0.3, 0.4], 10, "exact", "negative"),
    ([0, 0, 0], [0.3, 0.3, 0.4], 10, "exact", "no mass"),
    ([0.5, 0.5], [0.3, 0.3, 0.4], 10, "exact", "tokens"),
    ([0.5, float("nan")], [0.5, 0.5], 10, "exact", "NaN"),
    ([0.5, 0.5], [0.5, 0.5], 2_000_000, "exact", "samples"),
    ([0.5, 0.5], [0.5, 0.5], 2.5, "exact", "samples"),
    ([0.5, 0.5], [0.5, 0.5], 10, "greedy", "variant"),
    (["a", 1], [0.5, 0.5], 10, "exact", "numbers"),
])
def test_bad_input_is_a_clear_value_error(target, draft, samples, variant, word):
    with pytest.raises(ValueError, match=word):
        playground.simulate(target, draft, samples, variant, 0)


def test_weights_renormalise_and_parse_from_text():
    out = playground.simulate("2, 2", "[1, 3]", 1000, "exact", 0)
    assert out["expected"] == [0.5, 0.5] and sum(out["counts"]) == 1000


def test_figures_build_from_plain_data():
    target, draft = playground.TOY_PRESETS["overconfident draft"]
    tokens = list(playground.TOY_TOKENS)
    decomposition = playground_figures.decomposition_figure(playground.decomposition(target, draft), tokens)
    assert [len(t.y) for t in decomposition.data] == [6, 6, 6, 6]
    results = [playground.simulate(target, draft, 1000, v, 0) for v in playground.VARIANTS]
    assert len(playground_figures.histogram_figure(results, tokens).data) == len(playground.VARIANTS) + 1  # + p
    assert "lower" in playground_figures.mentored_figure(playground.mentored(target, draft, 0.2), tokens).layout.title.text


def test_greedy_match_always_emits_the_target_argmax():
    """The "keep the draft while the argmaxes agree" shortcut is greedy decoding: a one-hot output."""
    target, draft = playground.TOY_PRESETS["overconfident draft"]
    out = playground.simulate(target, draft, 10_000, "greedy-match", 0)
    assert out["counts"][max(range(len(target)), key=target.__getitem__)] == 10_000


def test_greedy_match_is_caught_at_positive_temperature_and_not_for_a_one_hot_target():
    """N = 100,000: biased (p < 1e-300 here, shown as "< 1e-300") wherever p is not one-hot."""
    biased = playground.simulate(*playground.TOY_PRESETS["overconfident draft"], N, "greedy-match", 0)
    assert biased["p_value"] < P_MIN and biased["max_gap"] == pytest.approx(0.7, abs=1e-9)
    exact = playground.simulate(*playground.TOY_PRESETS["one-hot target"], N, "greedy-match", 0)
    assert exact["max_gap"] == 0.0


def test_max_gap_is_the_largest_absolute_difference():
    out = playground.simulate([0.5, 0.5], [0.5, 0.5], 1000, "exact", 2)
    assert out["max_gap"] == pytest.approx(abs(out["counts"][0] / 1000 - 0.5))
