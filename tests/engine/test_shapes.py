"""engine.models.shapes: each hub preset's shape gives the parameter count its model card publishes."""
import pytest

from specviz.engine.models.presets import PRESETS
from specviz.engine.models.shapes import ARCHITECTURES, parameter_count

PUBLISHED = {  # preset -> (draft, target) parameters, in millions, as the model cards state them
    "smollm2": (134.5, 1711.4), "qwen2.5": (494.0, 3085.9), "gpt2": (124.4, 1557.6), "pythia": (70.4, 1414.6)}


def test_every_hub_preset_has_a_shape():
    assert set(ARCHITECTURES) == {name for name, p in PRESETS.items() if not p.target.startswith("/")} - {
        name for name in PRESETS if name.endswith("-local") or name == "shakespeare"}


@pytest.mark.parametrize("preset", sorted(PUBLISHED))
def test_shapes_have_the_published_sizes(preset):
    draft, target = ARCHITECTURES[preset]
    assert parameter_count(draft) / 1e6 == pytest.approx(PUBLISHED[preset][0], abs=0.1)
    assert parameter_count(target) / 1e6 == pytest.approx(PUBLISHED[preset][1], abs=0.1)


def test_a_random_model_is_seeded_built_in_its_dtype_and_leaves_the_global_generator_alone():
    import torch

    from specviz.engine.models.shapes import random_model

    tiny = {"model_type": "llama", "vocab_size": 64, "hidden_size": 16, "intermediate_size": 32,
            "num_hidden_layers": 1, "num_attention_heads": 2, "num_key_value_heads": 1}
    torch.manual_seed(123)
    expected_next = torch.rand(1)
    torch.manual_seed(123)
    a = random_model(tiny, torch.bfloat16, "cpu", seed=5)
    assert torch.equal(torch.rand(1), expected_next)
    b = random_model(tiny, torch.bfloat16, "cpu", seed=5)
    weights = [p for p in a.parameters()]
    assert all(p.dtype == torch.bfloat16 and p.device.type == "cpu" for p in weights)
    assert all(torch.equal(p, q) for p, q in zip(weights, b.parameters()))
