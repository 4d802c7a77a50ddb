"""What the browser tests share: Debian's chromium, a free port, opening the page, and the page's common moves.

The fixtures built on these (`served`, `app_url`, `browser`, `page`) are in conftest.py."""
from __future__ import annotations

import socket

CHROMIUM = "/usr/bin/chromium"
TIMEOUT = 20_000


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def open_page(browser, app_url, width=1400, height=1000):
    from playwright.sync_api import expect  # imported here: conftest.py imports this module for every app test

    context = browser.new_context(viewport={"width": width, "height": height})
    page = context.new_page()
    page.goto(app_url)
    expect(page.locator("#step-card .card")).to_be_visible(timeout=TIMEOUT)  # the recorded lesson, or "Press Step"
    expect(page.locator("body[data-specviz-ready]")).to_be_attached(timeout=TIMEOUT)  # page.js has run
    return context, page


def step(page):
    """Press Step; the first Step of a page replaces the recorded lesson it opens with by a live round: wait for that."""
    from playwright.sync_api import expect

    page.get_by_role("button", name="Step", exact=True).click()
    expect(page.locator("#step-card .recorded-card")).to_have_count(0, timeout=TIMEOUT)


def set_slider(page, elem_id, value):
    box = page.locator(f"#{elem_id} input[type=number]")
    box.fill(str(value))
    box.press("Enter")


def open_details(page):
    page.get_by_text("Full distributions and the story in words").click()


def in_viewport(page, selector) -> bool:
    box = page.locator(selector).bounding_box()
    size = page.viewport_size
    return box is not None and box["y"] >= 0 and box["x"] >= 0 and box["y"] < size["height"] and box["x"] < size["width"]
