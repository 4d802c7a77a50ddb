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


# What a browser test that timed out says about the page (CI keeps only its output): the card, the predict panel's
# question, the status line and any toast gradio raised (a server error, a lost connection).
PAGE_STATE = """() => { const q = document.querySelector('#question'), c = document.querySelector('#step-card .card');
  const text = (s) => [...document.querySelectorAll(s)].map(e => e.textContent.trim()).filter(Boolean);
  return {card: c ? {step: c.dataset.step, recorded: !!document.querySelector('#step-card .recorded-card')} : null,
          question: q ? {...q.dataset} : null, message: text('#message'), toasts: text('.toast-body'),
          focus: document.activeElement ? document.activeElement.tagName + '#' + document.activeElement.id : null}; }"""


def page_state(page) -> dict:
    try:
        return page.evaluate(PAGE_STATE)
    except Exception as err:  # the page itself gone: say so rather than hide the timeout
        return {"unreadable": repr(err)}


def waited(page, wait, what: str) -> None:
    """Run `wait()`; if it times out, fail saying `what` was awaited and what the page showed then."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    try:
        wait()
    except (PlaywrightTimeout, AssertionError) as err:
        raise AssertionError(f"{what}: timed out; the page showed {page_state(page)}") from err


def step(page):
    """Press Step; the first Step of a page replaces the recorded lesson it opens with by a live round: wait for that."""
    from playwright.sync_api import expect

    page.get_by_role("button", name="Step", exact=True).click()
    waited(page, lambda: expect(page.locator("#step-card .recorded-card")).to_have_count(0, timeout=TIMEOUT),
           "a live round after Step")


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
