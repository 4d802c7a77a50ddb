"""engine.caches.static_cache at its edges: a head that scores part of the vocabulary, families that scale their
logits after the head, and a forward that stops midway."""
from __future__ import annotations

import pytest
import torch

from specviz.engine.caches import static_cache
from specviz.engine.caches.cache import CachedModel
from specviz.engine.models.shapes import random_model

TINY = dict(num_hidden_layers=3, hidden_size=64, num_attention_heads=4, num_key_value_heads=2,
            intermediate_size=128, vocab_size=256)
IDS = torch.randint(0, 256, (16,), generator=torch.Generator().manual_seed(0)).tolist()


def test_equal_infinities_are_close_and_a_nan_is_not():
    logits = torch.tensor([[1.5, float("-inf"), -2.0, float("-inf")]], dtype=torch.bfloat16)
    assert static_cache._close(logits, logits.clone())
    assert not static_cache._close(logits, torch.tensor([[1.5, 0.0, -2.0, float("-inf")]], dtype=torch.bfloat16))
    assert not static_cache._close(torch.tensor([[1.5, float("nan"), -2.0, float("-inf")]]), logits.float())
    assert not static_cache._close(logits + 1, logits)


# (model_type, the config field that scales the logits after the head, its value): Granite divides, Cohere multiplies
SCALED = [("granite", "logits_scaling", 8.0), ("cohere", "logit_scale", 0.0625)]


@pytest.mark.parametrize("family,field,value", SCALED)
def test_the_static_path_scales_the_logits_as_the_models_own_forward(family, field, value):
    model = random_model({"model_type": family, **TINY, field: value}, torch.float32, "cpu", seed=1)
    assert static_cache.unsupported_reason(model) == ""
    with torch.inference_mode():
        own = model(torch.tensor([IDS])).logits[0]                                    # [16, V]
    static = CachedModel(model, 256, static_len=24)
    assert torch.allclose(static.forward(IDS[:10]), own[:10], atol=1e-4)
    assert torch.allclose(static.forward(IDS[10:], keep=1), own[-1:], atol=1e-4)


@pytest.mark.parametrize("family,field,value", SCALED)
def test_a_model_keeping_its_features_scales_the_logits_as_its_own_forward(family, field, value):
    model = random_model({"model_type": family, **TINY, field: value}, torch.float32, "cpu", seed=1)
    with torch.inference_mode():
        own = model(torch.tensor([IDS])).logits[0]
    for options in ({}, {"static_len": 24}):
        cached = CachedModel(model, 256, keep_features=True, **options)
        assert torch.allclose(cached.forward(IDS), own, atol=1e-4), options
        assert cached.features.shape == (1, 16, 64)


def test_a_forward_that_stops_midway_leaves_the_cache_as_it_was():
    """Layer 1 of 3 raises (as an out-of-memory would) after layer 0 wrote its keys: every layer's write
    position stays where it was, and the next forward gives what a cache that never failed gives."""
    model = random_model({"model_type": "llama", **TINY}, torch.float32, "cpu", seed=2)
    broken, clean = CachedModel(model, 256, static_len=24), CachedModel(model, 256, static_len=24)
    broken.forward(IDS[:8]), clean.forward(IDS[:8])
    layer = model.model.layers[1]

    def out_of_memory(*args, **kwargs):
        raise torch.OutOfMemoryError("CUDA out of memory (injected)")

    layer.forward = out_of_memory
    try:
        with pytest.raises(torch.OutOfMemoryError):
            broken.forward(IDS[8:12])
    finally:
        del layer.forward
    assert [int(x.cumulative_length) for x in broken.cache.layers] == [8, 8, 8]
    assert broken.seen == broken.static.length == 8
    assert torch.allclose(broken.forward(IDS[12:16]), clean.forward(IDS[12:16]), atol=1e-5)
