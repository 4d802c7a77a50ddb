"""The browser tests' fixtures: one app server and one chromium per test module, a fresh page per test."""
from __future__ import annotations

import os

import pytest

from tests.app.browsing import CHROMIUM, free_port, open_page


@pytest.fixture(scope="session")
def built_app():
    """The app's Blocks, built once, for tests that read its events (never launched, never changed)."""
    from specviz.app.wiring import build_app

    return build_app()


@pytest.fixture(scope="module")
def served(pair):
    """(the app's Blocks, its URL): one server for the module."""
    from specviz.app import CSS, PAGE_JS, build_app, i18n

    demo = build_app()
    demo.queue(default_concurrency_limit=None)
    port = int(os.environ.get("GRADIO_SERVER_PORT") or free_port())
    _, url, _ = demo.launch(server_name="127.0.0.1", server_port=port, prevent_thread_lock=True, js=PAGE_JS, css=CSS,
                            i18n=i18n(), quiet=True)
    yield demo, url
    demo.close()


@pytest.fixture(scope="module")
def app_url(served):
    return served[1]


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=[
            "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
            "--disable-sync", "--no-first-run"])
        yield b
        b.close()


@pytest.fixture
def page(browser, app_url):
    context, page = open_page(browser, app_url)
    yield page
    context.close()


@pytest.fixture
def forwards(monkeypatch):
    """How many nn.Module calls ran (every model forward is one or more)."""
    import torch

    count = {"n": 0}
    original = torch.nn.Module.__call__

    def counted(self, *args, **kwargs):
        count["n"] += 1
        return original(self, *args, **kwargs)

    monkeypatch.setattr(torch.nn.Module, "__call__", counted)
    return count
