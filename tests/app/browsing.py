"""What the browser tests share: Debian's chromium, a free port, opening the page, and the page's common moves.

The fixtures built on these (`served`, `app_url`, `browser`, `page`) are in conftest.py."""
from __future__ import annotations

import socket
import time

CHROMIUM = "/usr/bin/chromium"
TIMEOUT = 20_000


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def open_page(browser, app_url, width=1400, height=1000, query="", card=True, **context):
    """A fresh context's page at `app_url + query`, once it is ready for a visitor's first press: its card shown
    (`card`), page.js run, and the events the page starts as it opens (the URL's language, classroom and predict
    settings applied) all ended. A press made while such an event is in flight could be undone by its answer, which
    was computed before the press (under load that window lasts seconds)."""
    from playwright.sync_api import expect  # imported here: conftest.py imports this module for every app test

    ctx = browser.new_context(viewport={"width": width, "height": height}, **context)
    page = ctx.new_page()
    in_flight = track_events(page)
    page.goto(app_url + query)
    if card:
        expect(page.locator("#step-card .card")).to_be_visible(timeout=TIMEOUT)  # the recorded lesson, or "Press Step"
    expect(page.locator("body[data-specviz-ready]")).to_be_attached(timeout=TIMEOUT)  # page.js has run
    settle(page, in_flight)
    return ctx, page


def track_events(page) -> set:
    """The page's gradio events in flight: its open requests to the queue (an event's join, and the stream of its
    answers, which ends once none is pending)."""
    open_requests: set = set()
    page.on("request", lambda r: open_requests.add(r) if "/queue/" in r.url else None)
    page.on("requestfinished", lambda r: open_requests.discard(r))  # a lambda: playwright wraps python functions
    page.on("requestfailed", lambda r: open_requests.discard(r))
    return open_requests


OPENING_S = 90  # the opening events may queue behind the work of the module's earlier tests (one server a module)


def settle(page, in_flight: set, quiet_ms: int = 300) -> None:
    """Wait until no event is in flight and none has started for `quiet_ms` (at most OPENING_S): under load an
    opening event of a classroom page was still open after 20 s in two runs."""
    deadline, quiet_since = time.monotonic() + OPENING_S, None
    while time.monotonic() < deadline:
        if in_flight:
            quiet_since = None
        elif quiet_since is None:
            quiet_since = time.monotonic()
        elif time.monotonic() - quiet_since >= quiet_ms / 1000:
            return
        page.wait_for_timeout(50)  # lets playwright deliver the request events
    raise AssertionError(f"the page's opening events did not end within {OPENING_S} s: {[r.url for r in in_flight]}")


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
