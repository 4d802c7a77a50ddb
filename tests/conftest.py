import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
os.environ.setdefault("TRANSFORMERS_NO_ADVISORY_WARNINGS", "1")

import pytest  # noqa: E402


@pytest.fixture(scope="session")
def pair():
    """The bundled Shakespeare pair, loaded once for the whole run (as the app shares it)."""
    from specviz.engine.models.loading import load_pair

    # SPECVIZ_TEST_DEVICE / SPECVIZ_TEST_DTYPE run the engine tests on a GPU (e.g. cuda, float16)
    return load_pair("shakespeare", device=os.environ.get("SPECVIZ_TEST_DEVICE", "cpu"),
                     dtype=os.environ.get("SPECVIZ_TEST_DTYPE") or None)
