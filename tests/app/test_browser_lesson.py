"""The lesson in a real browser: classroom mode, every size and zoom, zh / ja, dark mode, keys, first-lesson defaults.

One server and one chromium for the module; each test opens its own context (viewport, zoom as
device_scale_factor, locale, colour scheme, touch)."""
from __future__ import annotations

import os
import re
import time

import pytest

from tests.app.browsing import CHROMIUM, TIMEOUT, free_port, set_slider, step, waited

playwright = pytest.importorskip("playwright.sync_api")
from playwright.sync_api import expect  # noqa: E402

pytestmark = pytest.mark.skipif(not os.path.exists(CHROMIUM), reason="needs Debian's chromium")
SHOTS = os.environ.get("SPECVIZ_SCREENSHOT_DIR")


@pytest.fixture(scope="module")
def app_url(pair):
    from specviz.app import CSS, PAGE_JS, build_app, i18n

    demo = build_app()
    demo.queue(default_concurrency_limit=None)
    _, url, _ = demo.launch(server_name="127.0.0.1", server_port=free_port(), prevent_thread_lock=True, js=PAGE_JS,
                            css=CSS, i18n=i18n(), quiet=True)
    yield url
    demo.close()


def open_page(browser, url, width, height, query="", **context):
    ctx = browser.new_context(viewport={"width": width, "height": height}, **context)
    page = ctx.new_page()
    page.goto(url + query)
    expect(page.locator("#step-card .card")).to_be_visible(timeout=TIMEOUT)  # the recorded lesson
    expect(page.locator("body[data-specviz-ready]")).to_be_attached(timeout=TIMEOUT)  # page.js has run
    return ctx, page


def shot(page, name):
    if SHOTS:
        page.screenshot(path=os.path.join(SHOTS, name))


def test_step_with_every_argument_left_out_shows_a_first_lesson(app_url):
    """The defaults (prompt, T 0.5, seed 110, γ 4): round 1 keeps a prefix and resamples, and a bonus follows."""
    from gradio_client import Client

    client = Client(app_url, verbose=False)
    summaries = [re.sub(r"<[^>]+>", "", client.predict(api_name="/step")[-1]) for _ in range(3)]
    assert re.search(r"drafted 4, kept [1-3];", summaries[0]) and "from the residual" in summaries[0]
    assert any("bonus token" in s for s in summaries[1:])


def text_sizes_and_boxes(page):
    return page.evaluate("""() => {
      const texts = [...document.querySelectorAll('#step-card *, #round-summary *, #counters .speed-argument *, ' +
                                                  '#timeline .text-view, #timeline .text-view *')]
        .filter(e => [...e.childNodes].some(n => n.nodeType === 3 && n.textContent.trim()) && e.offsetParent !== null
                && !e.closest('.sv-hidden'));
      const box = (s) => { const r = document.querySelector(s).getBoundingClientRect(); return [r.top, r.bottom]; };
      return {min_font: Math.min(...texts.map(e => parseFloat(getComputedStyle(e).fontSize))),
              bars: [...document.querySelectorAll('#step-card .verify .logbar')].map(e => e.getBoundingClientRect().width),
              summary: box('#round-summary'), card: box('#step-card'), argument: box('#counters .speed-argument'),
              buttons: ['#step', '#play', '#reset'].map(s => document.querySelector(s).getBoundingClientRect().height),
              speed: document.querySelector('#speed input[type=number]').value,
              speed_visible: document.querySelector('#speed').offsetParent !== null,
              settings_hidden: document.querySelector('#settings').offsetParent === null};
    }""")


@pytest.mark.parametrize("width, height", [(1920, 1080), (1280, 720)])
def test_classroom_mode_is_legible_and_fits_after_step(browser, app_url, width, height):
    ctx, page = open_page(browser, app_url, width, height)
    try:
        set_slider(page, "gamma", 8)
        page.locator("#classroom input").check()
        for n in (1, 2):
            step(page)
            expect(page.locator("#step-card")).to_contain_text(f"Step {n}", timeout=TIMEOUT)
        page.wait_for_timeout(600)
        m = text_sizes_and_boxes(page)
        assert m["min_font"] >= 20, m
        assert m["bars"] and min(m["bars"]) >= 200, m
        for part in ("summary", "card", "argument"):
            top, bottom = m[part]
            assert 0 <= top and bottom <= height, (part, m)
        assert min(m["buttons"]) >= 48 and m["settings_hidden"] and m["speed_visible"] and float(m["speed"]) >= 2
        shot(page, f"classroom-{width}x{height}.png")
    finally:
        ctx.close()


@pytest.mark.parametrize("width, height, scale", [(1920, 1080, 1), (1280, 720, 1), (853, 480, 1.5)])
def test_in_classroom_mode_the_card_fits_its_width_up_to_a_projector_at_150_percent(browser, app_url, width, height,
                                                                                     scale):
    """A room cannot scroll the card sideways: its table, verdicts included, fits the card (at 150% a 1280 x 720
    projector is 853 x 480, where 210 px bars cut "✓ accepted" to "✓ accepte")."""
    ctx, page = open_page(browser, app_url, width, height, "?classroom=1", device_scale_factor=scale)
    try:
        step(page)
        expect(page.locator("#step-card")).to_contain_text("Step 1", timeout=TIMEOUT)
        page.wait_for_timeout(300)
        fits = page.evaluate("""() => { const c = document.querySelector('#step-card'), t = c.querySelector('table');
            return [c.scrollWidth, c.clientWidth, t.getBoundingClientRect().right, c.getBoundingClientRect().right]; }""")
        assert fits[0] <= fits[1] + 1 and fits[2] <= fits[3] + 1, fits
    finally:
        ctx.close()


def test_classroom_mode_from_the_url(browser, app_url):
    ctx, page = open_page(browser, app_url, 1280, 720, "?classroom=1")
    try:
        expect(page.locator("#classroom input")).to_be_checked(timeout=TIMEOUT)
        expect(page.locator("#settings")).to_be_hidden(timeout=TIMEOUT)
    finally:
        ctx.close()


CUT_OFF = """() => {
  const w = document.documentElement.clientWidth;
  const scroller = (e) => { for (let a = e.parentElement; a; a = a.parentElement) {
      const o = getComputedStyle(a).overflowX; if ((o === 'auto' || o === 'scroll') && a.scrollWidth > a.clientWidth) return true; }
    return false; };
  return [...document.querySelectorAll('body *')].filter(e => e.offsetParent !== null &&
      [...e.childNodes].some(n => n.nodeType === 3 && n.textContent.trim()) && !e.closest('.js-plotly-plot, svg'))
    .filter(e => { const r = e.getBoundingClientRect(); return r.width > 0 && (r.right > w + 1 || r.left < -1) && !scroller(e); })
    .map(e => e.tagName + ':' + e.textContent.trim().slice(0, 30));
}"""


@pytest.mark.parametrize("width, height, scale", [(1024, 576, 1.25), (853, 480, 1.5), (640, 360, 2.0), (390, 844, 3.0)])
def test_no_text_is_cut_off_at_any_zoom_or_on_a_phone(browser, app_url, width, height, scale):
    ctx, page = open_page(browser, app_url, width, height, device_scale_factor=scale)
    try:
        step(page)
        expect(page.locator("#step-card")).to_contain_text("Step 1", timeout=TIMEOUT)
        # the Step's follow-up swaps the opening lesson's recorded race for the Race button's line: a tap on the
        # accordion while that moved the page below it missed once on a phone (a full run of 2026-11-28)
        expect(page.locator("#race .race-caption .recorded")).to_have_count(0, timeout=TIMEOUT)
        page.locator("#debug").get_by_text("Debug acceptance").click()
        expect(page.locator("#analytics table")).to_be_visible(timeout=TIMEOUT)
        page.wait_for_timeout(800)
        assert page.evaluate(CUT_OFF) == []
        assert page.evaluate("document.documentElement.scrollWidth <= document.documentElement.clientWidth + 1")
        if width == 390:
            sizes = page.evaluate("""() => [...document.querySelectorAll('#timeline .chip, #controls button')]
                .map(e => { const r = e.getBoundingClientRect(); return Math.min(r.width, r.height); })""")
            assert min(sizes) >= 40
            shot(page, "phone-debug-390x844.png")
    finally:
        ctx.close()


# Any word of a figure (a note, its title, a legend entry, an axis label) that runs past the figure's own edge.
PLOT_CUT_OFF = """() => [...document.querySelectorAll('.js-plotly-plot')].flatMap((plot) => {
  const svg = plot.querySelector('svg.main-svg'), box = svg && svg.getBoundingClientRect();
  if (!box || !box.width) return [];
  return [...plot.querySelectorAll('.annotation-text, .gtitle, .legendtext, .xtick text, .ytick text')]
    .filter((t) => { const r = t.getBoundingClientRect(); return r.width > 0 && (r.right > box.right + 1 || r.left < box.left - 1); })
    .map((t) => plot.closest('[id]').id + ': ' + t.textContent.slice(0, 40));
})"""


@pytest.mark.parametrize("width, height, scale, phone, query", [(390, 844, 2.0, True, ""), (390, 844, 2.0, True, "?lang=zh"),
                                                                (853, 480, 1.5, False, "")])
def test_every_word_of_the_steps_figures_stays_inside_them_on_a_phone_or_zoomed_in(browser, app_url, width, height,
                                                                                   scale, phone, query):
    """On a 390-wide phone each drafted position's caption ("position 1: drafted … p/q … accepted · other tokens …")
    ran up to 240 px past the figure's right edge, and the "u = … ✓ …" notes right of the accept track 80 px (the
    phone layout took away their margin); at 1280 × 720 zoomed to 150% the captions ran 45–62 px past it. The
    captions now wrap, the panels making room, and the notes keep theirs."""
    ctx, page = open_page(browser, app_url, width, height, query, device_scale_factor=scale, is_mobile=phone,
                          has_touch=phone)
    try:
        page.locator("#step").click()   # the Step button in either language
        expect(page.locator("#step-card .recorded-card")).to_have_count(0, timeout=TIMEOUT)
        page.locator(".label-wrap").filter(has_text=re.compile("Full distributions|完整分布")).click()
        for plot in ("#pq-plot", "#uniform-plot"):
            expect(page.locator(f"{plot} .annotation-text").first).to_be_visible(timeout=TIMEOUT)
        page.wait_for_timeout(800)  # the phone's relayout of each figure
        assert page.evaluate("document.querySelectorAll('#pq-plot .annotation-text').length") >= 2
        assert page.evaluate(PLOT_CUT_OFF) == []
        page.locator("#uniform-plot").scroll_into_view_if_needed()
        shot(page, f"figures-{width}x{height}{query.replace('?lang=', '-')}.png")
    finally:
        ctx.close()


@pytest.mark.parametrize("locale, step_label, accepted", [("zh-CN", "单步", "接受"), ("ja-JP", "ステップ", "採用")])
def test_the_page_follows_the_browsers_language(browser, app_url, locale, step_label, accepted):
    ctx, page = open_page(browser, app_url, 1280, 720, locale=locale)
    try:
        button = page.get_by_role("button", name=step_label, exact=True)
        expect(button).to_be_visible(timeout=TIMEOUT)
        button.click()
        waited(page, lambda: expect(page.locator("#step-card .recorded-card")).to_have_count(0, timeout=TIMEOUT),
               f"the tab's own Step, pressed in {locale}")
        expect(page.locator("#step-card")).to_contain_text(accepted, timeout=TIMEOUT)
        expect(page.locator("#what-you-see")).not_to_contain_text("What you are seeing", timeout=TIMEOUT)
        shot(page, f"lang-{locale}.png")
        page.locator("#lang").get_by_text("English").click()   # the switch on the page
        expect(page.get_by_role("button", name="Step", exact=True)).to_be_visible(timeout=TIMEOUT)
        expect(page.locator("#step-card")).to_contain_text("accepted", timeout=TIMEOUT)
    finally:
        ctx.close()


def test_a_language_switch_while_a_step_runs_is_what_stays(browser, app_url, monkeypatch):
    """The Step was sent in Chinese; English was chosen while it ran. The Step's Chinese answer is held back until
    #lang's English redraw has landed (the order CI met by chance): the card must end in English all the same."""
    import specviz.app.wiring as wiring

    answer = wiring.step_handler

    def answers_late(*args, **kwargs):
        out = answer(*args, **kwargs)
        time.sleep(2.0)   # the tab's lock is free: #lang's redraw goes out first
        return out

    monkeypatch.setattr(wiring, "step_handler", answers_late)
    ctx, page = open_page(browser, app_url, 1280, 720, locale="zh-CN")
    try:
        page.get_by_role("button", name="单步", exact=True).click()
        page.locator("#lang").get_by_text("English").click()
        expect(page.get_by_role("button", name="Step", exact=True)).to_be_visible(timeout=TIMEOUT)
        expect(page.locator("#step-card .recorded-card")).to_have_count(0, timeout=TIMEOUT)   # the Step's answer
        expect(page.locator("#step-card")).to_contain_text("accepted", timeout=TIMEOUT)
        page.wait_for_timeout(1500)
        expect(page.locator("#step-card")).not_to_contain_text("接受")
        expect(page.locator("#round-summary")).not_to_contain_text("步")
    finally:
        ctx.close()


def ratio(a, b):
    def lum(rgb):
        c = [x / 255 for x in rgb]
        c = [x / 12.92 if x <= 0.03928 else ((x + 0.055) / 1.055) ** 2.4 for x in c]
        return 0.2126 * c[0] + 0.7152 * c[1] + 0.0722 * c[2]
    hi, lo = sorted((lum(a), lum(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


COLOURS = """() => {
  const rgb = (s) => (s.match(/[\\d.]+/g) || []).slice(0, 4).map(Number);
  const bg = (e) => { for (let a = e; a; a = a.parentElement) { const c = rgb(getComputedStyle(a).backgroundColor);
      if (c.length === 3 || (c.length === 4 && c[3] > 0.5)) return c.slice(0, 3); }
    return rgb(getComputedStyle(document.body).backgroundColor).slice(0, 3); };
  const texts = [...document.querySelectorAll('#step-card *, #round-summary *, #counters *, #what-you-see *')]
    .filter(e => [...e.childNodes].some(n => n.nodeType === 3 && n.textContent.trim()) && e.offsetParent !== null)
    .map(e => [e.tagName + ':' + e.textContent.trim().slice(0, 20), rgb(getComputedStyle(e).color).slice(0, 3), bg(e)]);
  texts.push(['prompt', rgb(getComputedStyle(document.querySelector('#prompt textarea')).color).slice(0, 3),
              bg(document.querySelector('#prompt textarea'))]);
  const marks = [];
  for (const t of document.querySelectorAll('#step-card .track')) {
    marks.push(['tick', rgb(getComputedStyle(t.querySelector('.tick')).backgroundColor).slice(0, 3),
                rgb(getComputedStyle(t.querySelector('.zone')).backgroundColor).slice(0, 3)]);
  }
  for (const b of document.querySelectorAll('#step-card .logbar')) {
    marks.push(['bar', rgb(getComputedStyle(b.firstElementChild).backgroundColor).slice(0, 3), bg(b.parentElement)]);
  }
  return {texts, marks};
}"""


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_text_and_marks_keep_their_contrast_in_light_and_dark_mode(browser, app_url, scheme):
    ctx, page = open_page(browser, app_url, 1280, 720, color_scheme=scheme)
    try:
        step(page)
        expect(page.locator("#step-card")).to_contain_text("Step 1", timeout=TIMEOUT)
        page.wait_for_timeout(500)
        found = page.evaluate(COLOURS)
        low_text = [(n, round(ratio(c, b), 2)) for n, c, b in found["texts"] if ratio(c, b) < 4.5]
        low_marks = [(n, round(ratio(c, b), 2)) for n, c, b in found["marks"] if ratio(c, b) < 3]
        assert found["marks"] and low_text == [] and low_marks == []
        if scheme == "dark":
            shot(page, "dark-1280x720.png")
    finally:
        ctx.close()


def test_keys_queue_act_on_the_visible_tab_and_work_after_a_radio(browser, app_url):
    ctx, page = open_page(browser, app_url, 1280, 720)
    try:
        page.locator("#notation input[type=radio]").nth(1).check()   # a control that is not a text field
        for _ in range(5):
            page.keyboard.press("s")
        expect(page.locator("#step-card")).to_contain_text("Step 5", timeout=3 * TIMEOUT)
        page.get_by_role("tab", name="Playground: the proof").click()
        page.keyboard.press("s")
        page.keyboard.press("p")
        page.wait_for_timeout(1500)
        page.get_by_role("tab", name="Live models").click()
        expect(page.locator("#step-card")).to_contain_text("Step 5", timeout=TIMEOUT)
        assert page.locator("#play").inner_text() == "Play"
        assert page.locator(".key-hint").first.is_visible()
    finally:
        ctx.close()


def test_no_key_hints_on_a_touch_screen(browser, app_url):
    ctx, page = open_page(browser, app_url, 390, 844, has_touch=True, is_mobile=True)
    try:
        expect(page.locator(".key-hint").first).to_be_hidden(timeout=TIMEOUT)
    finally:
        ctx.close()


def test_no_label_covers_the_sticky_buttons_when_scrolled(browser, app_url):
    ctx, page = open_page(browser, app_url, 1280, 720)
    try:
        for y in (140, 280, 600):
            page.evaluate(f"window.scrollTo(0, {y})")
            page.wait_for_timeout(200)
            hits = page.evaluate("""() => ['#step', '#play', '#reset'].map(s => {
                const r = document.querySelector(s).getBoundingClientRect();
                const e = document.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2);
                return !!e && !!e.closest(s); })""")
            assert hits == [True, True, True], y
        step(page)
        expect(page.locator("#step-card")).to_contain_text("Step 1", timeout=TIMEOUT)
    finally:
        ctx.close()


def test_play_never_moves_a_page_the_reader_has_scrolled(browser, app_url):
    ctx, page = open_page(browser, app_url, 390, 844)
    try:
        set_slider(page, "speed", 0.5)
        page.locator("#play").click()
        expect(page.locator("#step-card")).to_contain_text("Step 1", timeout=TIMEOUT)
        page.evaluate("window.scrollTo(0, 900)")
        page.wait_for_timeout(100)
        # what the reader is looking at: the page block at the middle of the window, and where it is
        page.evaluate("""() => { window.__seen = document.elementFromPoint(innerWidth / 2, innerHeight / 2).closest('.block');
                                 window.__top = window.__seen.getBoundingClientRect().top; }""")
        page.wait_for_function("Number(document.querySelector('#step-card .card')?.dataset.step) >= 4", timeout=TIMEOUT)
        moved = page.evaluate("window.__seen.getBoundingClientRect().top - window.__top")
        assert abs(moved) <= 2 and page.evaluate("window.scrollY") > 600
        page.locator("#play").click()  # Pause (the sticky bar stays reachable)
    finally:
        ctx.close()


def test_reveal_shows_draft_then_each_row_then_correct(browser, app_url):
    ctx, page = open_page(browser, app_url, 1280, 720)
    try:
        page.locator("#reveal input").check()
        step(page)
        expect(page.locator("#step-card .card")).to_have_attribute("data-step", "1", timeout=TIMEOUT)
        hidden = lambda: page.locator("#step-card .sv-hidden").count()
        expect(page.locator("#step-card [data-phase=draft]")).to_be_visible(timeout=TIMEOUT)
        seen = [hidden()]
        while seen[-1]:
            step(page)
            page.wait_for_timeout(100)
            seen.append(hidden())
        rows = page.locator("#step-card tr.verify-row").count()
        assert seen == sorted(seen, reverse=True) and len(seen) >= rows + 3  # verify heading, each row, correct
        expect(page.locator("#step-card .card")).to_have_attribute("data-step", "1")
        step(page)  # all shown: the next press runs the next round
        expect(page.locator("#step-card .card")).to_have_attribute("data-step", "2", timeout=TIMEOUT)
    finally:
        ctx.close()


def test_kl_scale_writes_the_budget_and_shows_what_it_buys(browser, app_url):
    ctx, page = open_page(browser, app_url, 1280, 720)
    try:
        step(page)
        expect(page.locator("#step-card")).to_contain_text("Step 1", timeout=TIMEOUT)
        set_slider(page, "kl-scale", 5)   # 0, 0.001, 0.002, 0.005, 0.01, 0.02
        expect(page.locator("#kl-budget input")).to_have_value("0.02", timeout=TIMEOUT)
        expect(page.locator("#kl-buys")).to_contain_text("at KL 0.02", timeout=TIMEOUT)
        exact, mentored = [float(x) for x in re.findall(r"\d\.\d{3}", page.locator("#kl-buys").inner_text())[:2]]
        assert 0 < exact <= mentored <= 1
        page.locator("#lang").get_by_text("日本語").click()   # the note follows the page's language
        expect(page.locator("#kl-buys")).to_contain_text("厳密（KL 0）", timeout=TIMEOUT)
    finally:
        ctx.close()


@pytest.mark.parametrize("query, tab", [("", "Playground: the proof"), ("?lang=ja", "プレイグラウンド：証明")])
def test_phone_figures_keep_titles_legends_and_axis_titles_apart(browser, app_url, query, tab):
    """Japanese titles have no spaces to wrap at: they are cut between characters instead."""
    ctx, page = open_page(browser, app_url, 390, 844, query)
    try:
        page.get_by_role("tab", name=tab).click()
        if query:  # drawn in the page's language, not in the English the page starts in before its script runs
            expect(page.locator("#pg-decomposition .gtitle")).to_contain_text("出力が", timeout=TIMEOUT)
        page.locator("#pg-run").click()
        expect(page.locator("#pg-histogram g.point path").first).to_be_attached(timeout=TIMEOUT)
        page.wait_for_timeout(1500)
        for plot in ("#pg-decomposition", "#pg-histogram", "#pg-mentored"):
            boxes = page.evaluate(f"""() => {{
                const el = document.querySelector('{plot} .js-plotly-plot');
                const r = (e) => {{ const b = e.getBoundingClientRect(); return [b.left, b.top, b.right, b.bottom]; }};
                return {{title: [...el.querySelectorAll('.gtitle')].map(r), legend: [...el.querySelectorAll('.legend')].map(r),
                         axes: [...el.querySelectorAll('.xtitle, .x2title, .ytitle, .y2title, .y3title')].map(r),
                         fig: r(el)}}; }}""")
            (title,), (legend,) = boxes["title"], boxes["legend"]
            assert title[3] <= legend[1] or legend[3] <= title[1], plot   # no title under a legend
            assert legend[2] <= boxes["fig"][2] + 1 and title[2] <= boxes["fig"][2] + 1, plot
            axes = boxes["axes"]
            for i, a in enumerate(axes):
                for b in axes[i + 1:]:
                    assert a[2] <= b[0] or b[2] <= a[0] or a[3] <= b[1] or b[3] <= a[1], plot  # axis titles apart
        shot(page, f"phone-playground{query.replace('?lang=', '-')}-390x844.png")
    finally:
        ctx.close()


def test_switching_to_chinese_translates_figures_and_the_playground_table(browser, app_url):
    """#lang on an English page: after Step the figure titles are Chinese, and so is the Playground table."""
    ctx, page = open_page(browser, app_url, 1280, 720, locale="en-US")
    try:
        page.locator("#lang").get_by_text("中文").click()
        button = page.get_by_role("button", name="单步", exact=True)
        expect(button).to_be_visible(timeout=TIMEOUT)
        button.click()
        expect(page.locator("#step-card")).to_contain_text("第 1 步", timeout=TIMEOUT)
        page.get_by_text("完整分布与文字叙述").click()
        expect(page.locator("#pq-plot .gtitle")).to_contain_text("2. 验证 — 每个草稿位置上的目标模型 p", timeout=TIMEOUT)
        expect(page.locator("#notation")).to_contain_text("Leviathan 等 2023：p 目标模型，q 草稿模型", timeout=TIMEOUT)
        page.get_by_text("本次运行至今").click()
        expect(page.locator("#history-plot .gtitle")).to_contain_text("本次运行至今", timeout=TIMEOUT)
        page.get_by_role("tab", name="演练场：证明").click()
        page.locator("#pg-run").click()
        expect(page.locator("#pg-summary th").first).to_have_text("规则", timeout=TIMEOUT)
        assert [page.locator("#pg-summary th").nth(i).inner_text() for i in range(4)] == \
            ["规则", "卡方检验 p 值", "最大偏差 ∣观测 − p∣", "判定"]
        expect(page.locator("#pg-histogram .gtitle")).to_contain_text("观测频率", timeout=TIMEOUT)
        expect(page.locator("#pg-preset input")).to_have_value("草稿分布过于自信", timeout=TIMEOUT)
        typed = page.locator("#pg-target textarea")
        typed.fill("0.4, 0.2, 0.2, 0.1, 0.05, 0.05")
        page.locator("#lang").get_by_text("日本語").click()   # a table already shown follows the switch
        expect(page.locator("#pg-summary th").first).to_have_text("規則", timeout=TIMEOUT)
        expect(page.locator("#pg-preset input")).to_have_value("自信過剰なドラフト", timeout=TIMEOUT)
        page.wait_for_timeout(1500)   # time for a preset change event, had the renaming fired one
        assert typed.input_value() == "0.4, 0.2, 0.2, 0.1, 0.05, 0.05"   # renaming the presets keeps what was typed
        expect(page.locator("#pg-decomposition .gtitle")).to_contain_text("出力がちょうど p になる理由", timeout=TIMEOUT)
    finally:
        ctx.close()
