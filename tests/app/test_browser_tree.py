"""A tree step in a real browser: the #drafts control, the tree card within one 1280x720 screen."""
from __future__ import annotations

import os

import pytest

from tests.app.browsing import TIMEOUT, open_page, set_slider, step

playwright = pytest.importorskip("playwright.sync_api")
from playwright.sync_api import expect  # noqa: E402


def test_a_tree_step_fits_one_1280x720_screen(browser, app_url):
    context, page = open_page(browser, app_url, 1280, 720)
    try:
        set_slider(page, "drafts", 4)
        set_slider(page, "gamma", 4)
        for n in range(1, 5):  # step 4 of this seed tries all four siblings at depth 1: the tallest card
            step(page)
            expect(page.locator("#step-card")).to_contain_text(f"Step {n}", timeout=TIMEOUT)
        expect(page.locator("#step-card")).to_contain_text("k = 4 drafts", timeout=TIMEOUT)
        expect(page.locator("#step-card .tree-grid")).to_be_visible(timeout=TIMEOUT)
        page.wait_for_timeout(500)
        card = page.locator("#step-card").bounding_box()
        shot = os.environ.get("SPECVIZ_SCREENSHOT_DIR")
        if shot:
            page.screenshot(path=os.path.join(shot, "tree-step-1280x720.png"))
        assert card["y"] >= 0 and card["y"] + card["height"] <= 720
    finally:
        context.close()


def test_play_keeps_the_drafts_of_the_page(browser, app_url):
    """Play ticks read #drafts like Step does: two ticks continue one tree run (no "Settings changed")."""
    context, page = open_page(browser, app_url)
    try:
        set_slider(page, "drafts", 3)
        step(page)
        expect(page.locator("#step-card")).to_contain_text("k = 3 drafts", timeout=TIMEOUT)
        page.get_by_role("button", name="Play", exact=True).click()
        expect(page.locator("#step-card")).to_contain_text("Step 3", timeout=TIMEOUT * 3)
        page.get_by_role("button", name="Pause", exact=True).click()
        expect(page.locator("#step-card")).to_contain_text("k = 3 drafts", timeout=TIMEOUT)
        assert "Settings changed" not in page.locator("#message").inner_text()
    finally:
        context.close()
