"""core.warping against transformers' own logits warpers, which `generate` applies in the same order."""
import pytest
import torch
from transformers.generation.logits_process import TemperatureLogitsWarper, TopKLogitsWarper, TopPLogitsWarper

from specviz.core.warping import warp


def reference(logits, temperature, top_k, top_p):
    scores = logits.clone()
    if temperature != 1.0:
        scores = TemperatureLogitsWarper(temperature)(None, scores)
    if top_k:
        scores = TopKLogitsWarper(top_k)(None, scores)
    if top_p is not None and top_p < 1:
        scores = TopPLogitsWarper(top_p)(None, scores)
    return scores.softmax(-1)


@pytest.mark.parametrize("temperature, top_k, top_p", [
    (1.0, None, None), (0.7, None, None), (1.3, 5, None), (1.0, None, 0.9), (0.8, 20, 0.7), (1.0, 1, None),
    (1.0, None, 0.05), (2.0, 3, 0.5)])
def test_warp_equals_transformers_warpers(temperature, top_k, top_p):
    logits = torch.randn(6, 50, generator=torch.Generator().manual_seed(3)) * 3  # [6, V]
    logits[0, :4] = 2.5  # ties at the top-k and top-p boundaries
    assert torch.allclose(warp(logits, temperature, top_k, top_p), reference(logits, temperature, top_k, top_p), atol=1e-7)


@pytest.mark.parametrize("temperature", [1e-30, 1e-38, 1e-45, 1e-300, 5e-324])
def test_a_tiny_temperature_gives_the_argmax_limit_not_nan(temperature):
    """logits / T past float32's range made inf - inf = NaN in the softmax (a visitor's T = 1e-40 on the page).
    The limit T -> 0+ puts all the mass on the largest logit, shared equally between tied ones."""
    logits = torch.tensor([[5.0, -2.0, 1.0, 4.0], [3.0, 7.5, 7.5, -1.0], [-50.0, -60.0, -55.0, -51.0]])
    expected = torch.tensor([[1.0, 0, 0, 0], [0, 0.5, 0.5, 0], [1.0, 0, 0, 0]])
    assert torch.equal(warp(logits, temperature), expected)
    assert torch.equal(warp(logits, temperature, top_k=2, top_p=0.9), expected)
