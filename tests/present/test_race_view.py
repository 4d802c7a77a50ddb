"""specviz.present.race: the race's two lanes as HTML, every token with the time it was ready."""
from __future__ import annotations

import re

import pytest

from specviz.engine.serving.race import SPECULATIVE, TARGET_ONLY, Lane, Race
from specviz.present.race import race_html

RACE = Race(target_only=Lane(TARGET_ONLY, ("a", " b", "<c>"), ("target",) * 3, (0.01, 0.02, 0.03), 3, 0),
            speculative=Lane(SPECULATIVE, ("a", " b", "<d>"), ("accepted", "accepted", "bonus"), (0.012,) * 3, 1, 2),
            first=TARGET_ONLY, device="cpu")


def lanes(html: str) -> dict[str, list[float]]:
    out = {}
    for side, body in re.findall(r'data-side="(\w+)".*?<div class="race-text">(.*?)</div></div>', html):
        out[side] = [float(ms) for ms in re.findall(r'data-ms="([\d.]+)"', body)]
    return out


def test_every_token_carries_the_millisecond_its_side_had_it_ready():
    assert lanes(race_html(RACE)) == {TARGET_ONLY: [10.0, 20.0, 30.0], SPECULATIVE: [12.0, 12.0, 12.0]}


def test_the_speculative_lane_marks_accepted_and_bonus_tokens_as_the_card_does():
    html = race_html(RACE)
    assert html.count('class="race-tok accepted"') == 2 and html.count('class="race-tok bonus"') == 1


def test_token_text_is_escaped():
    html = race_html(RACE)
    assert "&lt;c&gt;" in html and "<c>" not in html


def test_the_result_is_tokens_per_second_each_way():
    # 3 tokens in 0.03 s against 3 in 0.012 s: 2.5 times the rate
    assert "×2.50" in race_html(RACE)


def test_each_new_rendering_has_its_own_id_so_the_page_replays_it_once():
    ids = [re.search(r'data-race="(\d+)"', race_html(RACE)).group(1) for _ in range(2)]
    assert ids[0] != ids[1]


@pytest.mark.parametrize("lang, words", [("en", "target only"), ("zh", "仅目标模型"), ("ja", "ターゲットのみ")])
def test_the_race_speaks_the_page_language(lang, words):
    html = race_html(RACE, lang)
    assert words in html and "{" not in html


def test_before_any_race_a_line_says_what_the_button_does():
    assert "Race" in race_html(None) and "data-race" not in race_html(None)
