import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
os.environ.setdefault("TRANSFORMERS_NO_ADVISORY_WARNINGS", "1")

import pytest


@pytest.fixture(scope="session")
def pair():
    """The bundled Shakespeare pair, loaded once for the whole run (as the app shares it)."""
    from specviz.engine.models.loading import load_pair

    # SPECVIZ_TEST_DEVICE / SPECVIZ_TEST_DTYPE run the engine tests on a GPU (e.g. cuda, float16)
    return load_pair("shakespeare", device=os.environ.get("SPECVIZ_TEST_DEVICE", "cpu"),
                     dtype=os.environ.get("SPECVIZ_TEST_DTYPE") or None)


@pytest.fixture(scope="session")
def page_settings():
    """The page's settings by name, the one base every test changes: `page_settings(seed=3)` is the base with
    seed 3 (the bundled pair, T = 1, top-k and top-p off, 40 tokens)."""
    from dataclasses import replace

    from specviz.present.page_settings import PageSettings

    base = PageSettings(notation="leviathan", preset="shakespeare", prompt="ROMEO.\nBut soft", gamma=4, temperature=1.0,
                        top_k=0, top_p=1.0, kl_budget=0.0, seed=0, max_new_tokens=40, draft_model="", target_model="",
                        drafts=1, lang="en", drafter="model")
    return lambda **change: replace(base, **change)


BROWSER_FIXTURES = {"browser", "page"}  # tests/app/conftest.py: Debian's chromium through Playwright


def pytest_collection_modifyitems(items):
    """Every test that drives chromium, or sits in a browser module (tests/app/test_browser*.py) beside such tests, is
    `slow` (pyproject.toml's markers): `python -m pytest -m "not slow"` is the inner loop."""
    for item in items:
        if BROWSER_FIXTURES & set(getattr(item, "fixturenames", ())) or item.path.name.startswith("test_browser"):
            item.add_marker(pytest.mark.slow)
