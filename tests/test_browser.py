"""The app in a real browser: Debian's chromium driven by Playwright, against a local server."""
from __future__ import annotations

import os
import shutil
import socket

import pytest

playwright = pytest.importorskip("playwright.sync_api")
from playwright.sync_api import expect, sync_playwright  # noqa: E402

CHROMIUM = "/usr/bin/chromium"
pytestmark = pytest.mark.skipif(not shutil.which(CHROMIUM), reason="needs Debian's chromium (apt-get install chromium)")
TIMEOUT = 20_000


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def app_url(pair):
    from specviz.ui import CHIP_CLICK_JS, build_app

    demo = build_app()
    demo.queue(default_concurrency_limit=None)
    port = int(os.environ.get("GRADIO_SERVER_PORT") or free_port())
    _, url, _ = demo.launch(server_name="127.0.0.1", server_port=port, prevent_thread_lock=True, js=CHIP_CLICK_JS,
                            quiet=True)
    yield url
    demo.close()


@pytest.fixture(scope="module")
def browser():
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=[
            "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
            "--disable-sync", "--no-first-run"])
        yield b
        b.close()


@pytest.fixture
def page(browser, app_url):
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    page.goto(app_url)
    yield page
    context.close()


def step(page):
    page.get_by_role("button", name="Step", exact=True).click()


def test_three_steps_show_chips_figures_and_counters(page):
    for n in range(1, 4):
        step(page)
        expect(page.locator("#counters")).to_contain_text("target forward passes", timeout=TIMEOUT)
        expect(page.locator("#narration")).to_contain_text(f"Step {n}", timeout=TIMEOUT)
    chips = page.locator("#timeline .chip")
    expect(chips.first).to_be_visible(timeout=TIMEOUT)
    verdicts = set(chips.evaluate_all("els => els.map(e => e.dataset.verdict)"))
    assert verdicts <= {"accepted", "rejected", "resampled", "bonus"}
    assert verdicts & {"resampled", "bonus"}  # every step ends with exactly one of them
    assert ("rejected" in verdicts) == ("resampled" in verdicts)
    for plot in ("#pq-plot", "#uniform-plot", "#residual-plot"):
        expect(page.locator(f"{plot} g.point path").first).to_be_visible(timeout=TIMEOUT)  # drawn bars
    counters = page.locator("#counters td")
    expect(counters.nth(1)).not_to_have_text("0", timeout=TIMEOUT)
    calls = page.locator("#counters tr", has_text="target forward passes").locator("td").nth(1)
    expect(calls).to_have_text("3", timeout=TIMEOUT)
    shot = os.environ.get("SPECVIZ_SCREENSHOT")
    if shot:
        page.screenshot(path=shot, full_page=True)


def test_clicking_a_chip_shows_its_step(page):
    for n in range(1, 3):
        step(page)
        expect(page.locator("#narration")).to_contain_text(f"Step {n}", timeout=TIMEOUT)
    page.locator('#timeline .chip[data-step="1"]').first.click()
    expect(page.locator("#narration")).to_contain_text("Step 1", timeout=TIMEOUT)


def test_play_then_reset_leaves_a_clean_state(page):
    page.get_by_role("button", name="Play", exact=True).click()
    expect(page.locator("#narration")).to_contain_text("Step 2", timeout=TIMEOUT)
    page.get_by_role("button", name="Reset", exact=True).click()
    expect(page.locator("#timeline .chip")).to_have_count(0, timeout=TIMEOUT)
    page.wait_for_timeout(2500)  # a late tick must not bring chips back
    expect(page.locator("#timeline .chip")).to_have_count(0)
    expect(page.locator("#narration")).to_contain_text("Nothing yet")
    expect(page.get_by_role("button", name="Play", exact=True)).to_be_visible()
    step(page)
    expect(page.locator("#narration")).to_contain_text("Step 1", timeout=TIMEOUT)


def test_notation_switch_changes_the_labels(page):
    step(page)
    expect(page.locator("#narration")).to_contain_text("Step 1", timeout=TIMEOUT)
    expect(page.locator("#narration")).to_contain_text("the draft gave q =", timeout=TIMEOUT)
    page.locator("#notation").get_by_text("seed 004", exact=False).click()
    expect(page.locator("#narration")).to_contain_text("the draft gave θ =", timeout=TIMEOUT)
    expect(page.locator("#pq-plot")).to_contain_text("φ", timeout=TIMEOUT)
    expect(page.locator("#intro")).to_contain_text("min(1, φ/θ)", timeout=TIMEOUT)


def test_bad_input_shows_a_message_and_the_page_stays_usable(page):
    page.locator("#prompt textarea").fill("")
    step(page)
    expect(page.locator("#message")).to_contain_text("empty", timeout=TIMEOUT)
    page.locator("#prompt textarea").fill("KING.\nNow")
    step(page)
    expect(page.locator("#narration")).to_contain_text("Step 1", timeout=TIMEOUT)


def test_gradio_client_steps_keep_per_client_state(app_url):
    """The /step endpoint through gradio_client: each client is a session of its own."""
    from gradio_client import Client

    args = ("leviathan", "shakespeare", "KING.\nNow", 4, 1.0, 0, 1.0, 0.0, 3, 40)
    a, b = Client(app_url, verbose=False), Client(app_url, verbose=False)
    for _ in range(2):
        out_a = a.predict(*args, api_name="/step")
    out_b = b.predict(*args, api_name="/step")
    narration_a, narration_b = out_a[5], out_b[5]
    assert "Step 2" in narration_a and "Step 1" in narration_b
