"""The race in a real browser: #race-btn decodes both sides, the page replays them on one clock."""
from __future__ import annotations

import pytest

from tests.app.browsing import TIMEOUT, open_page

playwright = pytest.importorskip("playwright.sync_api")
from playwright.sync_api import expect  # noqa: E402

SHOWN = "(side) => document.querySelectorAll(`#race [data-side=${side}] .race-tok.shown`).length"
TOTAL = "(side) => document.querySelectorAll(`#race [data-side=${side}] .race-tok`).length"
# a race of this tab's own: the opening lesson's recorded race (shown before it) carries a "recorded on" badge
LIVE = "() => !!document.querySelector('#race .race-lane') && !document.querySelector('#race .race-caption .recorded')"


def test_the_race_replays_both_lanes_to_their_measured_ends(browser, app_url):
    context, page = open_page(browser, app_url, 1280, 720)
    try:
        expect(page.locator("#race .race-caption .recorded")).to_be_attached(timeout=TIMEOUT)  # the lesson's race
        page.locator("#race-btn").click()
        page.wait_for_function(LIVE, timeout=TIMEOUT)
        expect(page.locator("#race .race-lane")).to_have_count(2, timeout=TIMEOUT)
        for side in ("target_only", "speculative"):  # the default run: 80 tokens each
            page.wait_for_function(f"() => ({SHOWN})('{side}') === ({TOTAL})('{side}') && ({TOTAL})('{side}') == 80",
                                   timeout=TIMEOUT)
            lane = page.locator(f"#race [data-side={side}]")
            total_ms = float(lane.get_attribute("data-total-ms"))
            expect(lane.locator(".race-clock")).to_have_text(f"{total_ms / 1000:.2f} s", timeout=TIMEOUT)
        kinds = page.locator("#race [data-side=speculative] .race-tok").evaluate_all(
            "(els) => els.map((e) => e.classList[1])")
        assert set(kinds) <= {"accepted", "resampled", "bonus"} and "accepted" in kinds
    finally:
        context.close()


def test_replay_hides_the_tokens_and_shows_them_again(browser, app_url):
    context, page = open_page(browser, app_url, 1280, 720)
    try:
        page.locator("#race-btn").click()
        page.wait_for_function(LIVE, timeout=TIMEOUT)
        expect(page.locator("#race .race-replay").first).to_be_visible(timeout=TIMEOUT)
        page.wait_for_function(f"() => ({SHOWN})('target_only') === 80", timeout=TIMEOUT)
        page.locator("#race .race-replay[data-slow='10']").click()  # a tenth of the speed: the lane restarts
        page.wait_for_function(f"() => ({SHOWN})('target_only') < 80", timeout=TIMEOUT)
        page.wait_for_function(f"() => ({SHOWN})('target_only') === 80", timeout=60_000)
    finally:
        context.close()


def test_the_side_that_goes_first_alternates_between_a_tabs_races(browser, app_url):
    context, page = open_page(browser, app_url, 1280, 720)
    try:
        firsts = []
        for _ in range(2):
            page.locator("#race-btn").click()
            page.wait_for_function("(n) => document.querySelectorAll('#race .race[data-played]').length === 1 && "
                                   "document.querySelector('#race .race').dataset.race !== n && "
                                   "!document.querySelector('#race .race-caption .recorded')",
                                   arg=firsts[-1][1] if firsts else "", timeout=TIMEOUT)
            caption = page.locator("#race .race-caption").inner_text()
            firsts.append(("speculative first" in caption, page.locator("#race .race").get_attribute("data-race")))
        assert firsts[0][0] != firsts[1][0]
    finally:
        context.close()


def test_the_race_speaks_the_language_switched_to_during_and_after_it(browser, app_url, monkeypatch):
    """Race sent in English, 中文 chosen while it ran and its English answer held back until #lang's redraw has
    landed: the lanes end in Chinese; English again redraws the same lanes (no new race) in English."""
    import time

    import specviz.app.wiring as wiring

    answer = wiring.race_handler

    def answers_late(*args, **kwargs):
        out = answer(*args, **kwargs)
        time.sleep(2.0)
        return out

    monkeypatch.setattr(wiring, "race_handler", answers_late)
    context, page = open_page(browser, app_url, 1280, 720)
    try:
        page.locator("#race-btn").click()
        page.locator("#lang").get_by_text("中文").click()
        page.wait_for_function(LIVE, timeout=TIMEOUT)
        expect(page.locator("#race .race-replay").first).to_have_text("重播", timeout=TIMEOUT)
        clocks = "() => [...document.querySelectorAll('#race .race-lane')].map((l) => l.dataset.totalMs)"
        raced = page.evaluate(clocks)
        page.wait_for_timeout(1500)
        expect(page.locator("#race .race-caption")).not_to_contain_text("first")
        page.locator("#lang").get_by_text("English").click()
        expect(page.locator("#race .race-replay").first).to_have_text("Replay", timeout=TIMEOUT)
        assert page.evaluate(clocks) == raced and page.evaluate(LIVE)   # the same lanes, redrawn
    finally:
        context.close()
