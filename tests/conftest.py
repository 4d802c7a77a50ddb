import fcntl
import os
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
os.environ.setdefault("TRANSFORMERS_NO_ADVISORY_WARNINGS", "1")
# A timed Step waits for a quiet machine (SPECVIZ_QUIET_WAIT_MS, 600 ms served locally): under pytest-xdist the other
# worker is never quiet, so every timed Step of every test would wait it out. Its own tests (test_threads.py) set it
# explicitly, and the speed test serves the app with the default, as a visitor's page runs.
os.environ.setdefault("SPECVIZ_QUIET_WAIT_MS", "0")

import pytest

if os.environ.get("PYTEST_XDIST_WORKER"):
    # pytest-xdist (the README's `-n 2`): one worker a core, so each worker's torch computes on one thread
    import torch

    torch.set_num_threads(1)


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
    `slow` (pyproject.toml's markers): `python -m pytest -m "not slow"` is the inner loop. A chromium test is also
    `alone`: it times keys, scrolls and events against a page served on the same two cores, and beside the other
    worker's test it failed now and then under `-n 2` (three different browser tests in three full runs)."""
    for item in items:
        if BROWSER_FIXTURES & set(getattr(item, "fixturenames", ())) or item.path.name.startswith("test_browser"):
            item.add_marker(pytest.mark.slow)
            if BROWSER_FIXTURES & set(getattr(item, "fixturenames", ())):
                item.add_marker(pytest.mark.alone)


@pytest.fixture(autouse=True)
def _one_machine(request):
    """Under pytest-xdist the two workers share the machine's two cores. A test marked `alone` times the machine
    (a page against the bench, latencies under load) and runs while no other test runs: it takes a lock file
    exclusively, every other test takes it shared. An `alone` test that waits raises a flag first, so the other
    worker starts no new test meanwhile (it would otherwise always find the lock shared and starve the waiter)."""
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if not worker:
        yield
        return
    folder = Path(tempfile.gettempdir()) / f"specviz-tests-{request.config.workerinput['testrunuid']}"
    folder.mkdir(exist_ok=True)
    flag, alone = folder / "alone-waiting", request.node.get_closest_marker("alone") is not None
    with open(folder / "lock", "a") as lock:
        if alone:
            flag.touch()
            fcntl.flock(lock, fcntl.LOCK_EX)  # waits for the other worker's test in progress to end
            flag.unlink(missing_ok=True)
        else:
            while flag.exists():  # an alone test is waiting: start nothing new
                time.sleep(0.05)
            fcntl.flock(lock, fcntl.LOCK_SH)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
