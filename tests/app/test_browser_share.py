"""Keeping a run in a real browser: the first paint is the recorded lesson (no forward), a link opens the same card
at the same step in another browser context, a report's trace file opens and Step moves through it, a changed
link is refused; screenshots of the lesson at three sizes."""
from __future__ import annotations

import os
import re

import pytest

from tests.app.browsing import CHROMIUM, TIMEOUT

playwright = pytest.importorskip("playwright.sync_api")
from playwright.sync_api import expect  # noqa: E402

pytestmark = pytest.mark.skipif(not os.path.exists(CHROMIUM), reason="needs Debian's chromium")
SHOTS = os.environ.get("SPECVIZ_SCREENSHOT_DIR")


def opened(browser, url, width=1400, height=1000, **context):
    ctx = browser.new_context(viewport={"width": width, "height": height}, **context)
    page = ctx.new_page()
    page.goto(url)
    expect(page.locator("body[data-specviz-ready]")).to_be_attached(timeout=TIMEOUT)
    return ctx, page


def own_step(page, n: int):
    page.locator("#step").click()
    expect(page.locator(f'#step-card .card[data-step="{n}"]')).to_be_visible(timeout=TIMEOUT)
    expect(page.locator("#step-card .recorded-card")).to_have_count(0, timeout=TIMEOUT)


def card_facts(page) -> dict:
    """What the card shows: its text (token texts, u and the accept chance to the printed digits, verdicts) and
    the timeline's tokens with their verdicts and steps."""
    return page.evaluate("""() => ({
      card: document.querySelector('#step-card .card').innerText,
      summary: document.querySelector('#round-summary .round-summary').innerText,
      chips: [...document.querySelectorAll('#timeline .chip')].map(c => [c.innerText, c.dataset.verdict, c.dataset.step]),
    })""")


def test_the_first_paint_is_the_recorded_lesson_without_a_forward(browser, app_url, forwards):
    for query, said in (("", "Lesson 1"), ("?lang=zh", "第 1 课")):
        ctx, page = opened(browser, app_url + query)
        try:
            expect(page.locator("#round-summary .lesson-note")).to_contain_text(said, timeout=TIMEOUT)
            expect(page.locator("#step-card .badge.recorded").first).to_be_visible(timeout=TIMEOUT)
            expect(page.locator('#step-card .card[data-step="1"]')).to_be_visible()
        finally:
            ctx.close()
    assert forwards["n"] == 0


def test_a_link_opens_the_same_card_at_the_same_step_in_classroom_mode_and_japanese(browser, app_url):
    ctx, page = opened(browser, app_url + "?classroom=1&lang=ja")
    try:
        for n in (1, 2, 3):
            own_step(page, n)
        page.locator('#timeline .chip[data-step="2"]:visible').first.click()  # a newline's chip has no box
        expect(page.locator('#step-card .card[data-step="2"]')).to_be_visible(timeout=TIMEOUT)
        shown = card_facts(page)
        page.locator("#share").click()
        link_box = page.locator("#share-link textarea, #share-link input").first
        expect(link_box).to_have_value(re.compile(r"#run=v1\."), timeout=TIMEOUT)
        link = link_box.input_value()
    finally:
        ctx.close()
    assert "classroom=1" in link and "lang=ja" in link
    ctx, page = opened(browser, link)
    try:
        expect(page.locator("#message")).to_contain_text("一致", timeout=60_000)
        expect(page.locator('#step-card .card[data-step="2"]')).to_be_visible(timeout=TIMEOUT)
        assert page.evaluate("document.body.classList.contains('classroom')")
        again = card_facts(page)
        viewing = re.compile(r"（表示中；最新はステップ \d+）")  # the run there ends at the linked step
        assert again["card"] == viewing.sub("", shown["card"], count=1) and again["summary"] == shown["summary"]
        assert again["chips"] == shown["chips"][: len(again["chips"])]
        expect(page.locator("#prompt textarea")).to_have_value("ROMEO.\nBut soft, what light")  # the next Step goes on
    finally:
        ctx.close()


def test_a_changed_link_is_refused_with_its_message(browser, app_url):
    ctx, page = opened(browser, app_url + "#run=v1.eNqrVkrOz0vOLy1JTVGyUsrPS1WqBQBKbQcf")
    try:
        expect(page.locator("#message")).to_contain_text("This link cannot be opened", timeout=TIMEOUT)
        expect(page.locator("#step-card .recorded-card")).to_be_visible()  # the lesson stays, labelled recorded
    finally:
        ctx.close()


def test_a_report_trace_opens_and_step_and_view_step_move_through_it(browser, app_url, tmp_path, forwards):
    from specviz.tools.report import run_report

    run_report(["ROMEO.\nBut soft"], tmp_path, preset="shakespeare", device="cpu", gamma=3, max_new_tokens=12,
               progress=open(os.devnull, "w"))
    forwards["n"] = 0
    ctx, page = opened(browser, app_url)
    try:
        page.locator("#trace-file-input").set_input_files(str(tmp_path / "traces.jsonl"))
        expect(page.locator("#message")).to_contain_text("Opened a recording", timeout=TIMEOUT)
        expect(page.locator("#step-card .badge.recorded").first).to_contain_text("recorded on cpu")
        page.get_by_role("button", name="Step", exact=True).click()
        expect(page.locator('#step-card .card[data-step="2"]')).to_be_visible(timeout=TIMEOUT)
        box = page.locator("#view-step input")
        box.fill("1")
        box.press("Enter")
        expect(page.locator('#step-card .card[data-step="1"]')).to_be_visible(timeout=TIMEOUT)
        expect(page.locator("#step-card .recorded-card")).to_be_visible()
    finally:
        ctx.close()
    assert forwards["n"] == 0


@pytest.mark.parametrize("name, width, height, scale, mobile", [
    ("lesson-1920x1080.png", 1920, 1080, 1, False),
    ("lesson-1280x720-150.png", 1280, 720, 1.5, False),
    ("lesson-390x844.png", 390, 844, 3, True),
])
def test_screenshots_of_the_recorded_lesson(browser, app_url, name, width, height, scale, mobile):
    """150% zoom is a CSS viewport of 1280/1.5 x 720/1.5 drawn at device scale 1.5 (what the browser does)."""
    w, h = (round(width / scale), round(height / scale)) if scale == 1.5 else (width, height)
    ctx, page = opened(browser, app_url, w, h, device_scale_factor=scale, is_mobile=mobile, has_touch=mobile)
    try:
        expect(page.locator("#round-summary .lesson-note")).to_be_visible(timeout=TIMEOUT)
        overflow = page.evaluate("document.documentElement.scrollWidth - document.documentElement.clientWidth")
        assert overflow <= 1, f"the page is {overflow}px wider than the window"
        if SHOTS:
            page.locator("#round-summary").scroll_into_view_if_needed()
            page.screenshot(path=os.path.join(SHOTS, name))
    finally:
        ctx.close()
