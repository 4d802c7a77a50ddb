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
