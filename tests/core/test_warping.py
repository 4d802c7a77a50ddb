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
