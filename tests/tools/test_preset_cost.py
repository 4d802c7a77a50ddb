"""tools.preset_cost on shrunken shapes (the real ones are for a GPU): the figures and the predictions."""
import pytest

from specviz.engine.models.shapes import ARCHITECTURES
from specviz.tools.preset_cost import TYPICAL_ALPHAS, measure_shapes
from tests.cli_runner import run_cli


def test_measures_both_models_and_predicts_from_the_cost_model():
    draft, target = ARCHITECTURES["gpt2"]
    out = measure_shapes(dict(draft, n_layer=1, n_embd=64, n_head=2), dict(target, n_layer=3, n_embd=64, n_head=2),
                         device="cpu", gammas=(1, 3), repeats=4, context_tokens=16)
    assert out["draft_ms"] > 0 and out["target_ms"] > 0 and set(out["verify_ms"]) == {"1", "3"}
    assert out["cost_ratio_c"] == pytest.approx(out["draft_ms"] / out["target_ms"], rel=1e-2)
    alpha, gamma = TYPICAL_ALPHAS[0], 3
    tokens = sum(alpha ** k for k in range(gamma + 1))  # Leviathan Eq. 1, written out here
    expected = tokens * out["target_ms"] / (gamma * out["draft_ms"] + out["verify_ms"]["3"])
    assert out["predicted_speedup"][str(alpha)]["3"]["cost_model"] == pytest.approx(expected, rel=1e-2)
    assert out["weights_mib"]["target"] > out["weights_mib"]["draft"] > 0


def test_a_preset_without_shapes_is_a_one_line_error():
    out = run_cli("bench", "--preset", "shakespeare", "--random-weights")
    assert out.returncode == 2 and out.stderr.startswith("error:") and "random-weights" in out.stderr
    assert "Traceback" not in out.stderr


def test_off_cuda_no_graph_figures_are_given_and_the_reason_is():
    draft, target = ARCHITECTURES["gpt2"]
    out = measure_shapes(dict(draft, n_layer=1, n_embd=64, n_head=2), dict(target, n_layer=2, n_embd=64, n_head=2),
                         device="cpu", gammas=(1,), repeats=2, context_tokens=8)
    assert out["graphs"] is None and out["graphs_off"] == "not on a CUDA device"
