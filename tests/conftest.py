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


def drives_chromium(item) -> bool:
    """Whether the test takes the `browser` or `page` fixture (a parameter of that name is not the fixture)."""
    params = getattr(getattr(item, "callspec", None), "params", {})
    return bool(BROWSER_FIXTURES & (set(getattr(item, "fixturenames", ())) - set(params)))


def pytest_collection_modifyitems(items):
    """Every test that drives chromium, or sits in a browser module (tests/app/test_browser*.py) beside such tests, is
    `slow` (pyproject.toml's markers): `python -m pytest -m "not slow"` is the inner loop. Then the run's order
    (`in_run_order`)."""
    for item in items:
        if drives_chromium(item) or item.path.name.startswith("test_browser"):
            item.add_marker(pytest.mark.slow)
    if os.environ.get("PYTEST_XDIST_WORKER"):  # `-n 0` (a debugger, `-x`, tools/mutation_check.py) keeps file order
        items[:] = in_run_order(items)


def in_run_order(items: list) -> list:
    """The run's order under pytest-xdist (pyproject.toml turns xdist's own reordering off, so its workers take the
    files in this order): the files without chromium or an `alone` test, those with an `early` test first (the load
    tests), then those with a `slow` test (the laws and subprocesses), the ones with more tests first within each
    (xdist's own heuristic: big files early, small ones fill the end); then the chromium files; then the files with an
    `alone` test.

    - A chromium test waits for events of a page served on the same two cores. Beside the other worker's laws and
      subprocesses it failed now and then (three different browser tests in three full runs, when they ran amid the
      rest); at the end, both workers run chromium tests, which mostly wait on the page, side by side.
    - The load tests load both cores for a minute or so. Beside browser tests they made them fail; `alone`, the other
      worker idled through them. First, they run beside laws and subprocesses, whose bounds are not times.
    - An `alone` test (the page's speed against the bench) waits for the other worker's test in progress and starts
      nothing meanwhile: amid the others it would run the other worker's tests one at a time; last, the alone tests
      run one after another while the rest is done."""
    files: dict = {}
    for item in items:
        files.setdefault(item.path, []).append(item)

    def key(tests):
        return (any(t.get_closest_marker("alone") for t in tests), any(drives_chromium(t) for t in tests),
                not any(t.get_closest_marker("early") for t in tests), not any(t.get_closest_marker("slow") for t in tests),
                -len(tests))

    return [item for tests in sorted(files.values(), key=key) for item in tests]


@pytest.fixture(autouse=True)
def _one_machine(request, monkeypatch):
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
            # a process the test starts computes on one thread, as this worker's torch does: two threads beside the
            # other worker's test oversubscribe the two cores (a subprocess's GGUF de-quantising took 61 s, 31 s alone)
            monkeypatch.setenv("OMP_NUM_THREADS", "1")
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
