"""specviz.present.race: the race's two lanes as HTML, every token with the time it was ready."""
from __future__ import annotations

import re

import pytest

from specviz.engine.serving.race import SPECULATIVE, TARGET_ONLY, Lane, Race
from specviz.present.race import race_html, race_status

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


def _race(**fields) -> Race:
    return Race(**{**vars(RACE), **fields})


def test_the_figure_comes_with_the_middle_half_of_its_slices():
    # slices 1, 2, 3, 4, 5: quartiles (exclusive method) 1.5 and 4.5
    html = race_html(_race(slice_speedups=(1.0, 2.0, 3.0, 4.0, 5.0)))
    assert "middle half of the 5 slices: ×1.50 to ×4.50" in html


def test_a_race_beside_busy_processes_says_so_and_a_quiet_one_does_not():
    assert "other processes used 1.3 cores" in race_html(_race(others_busy_cores=1.3))
    assert "other processes" not in race_html(_race(others_busy_cores=0.1))


def test_a_race_the_deadline_stopped_names_the_limit_and_what_each_lane_kept():
    status = race_status(_race(stopped_s=60.0))
    assert status.error
    assert "stopped between two forwards at the 60 s an event may run (SPECVIZ_EVENT_TIMEOUT_S)" in status.text
    assert "the 3 and 3 tokens" in status.text and "max_new_tokens" in status.text


def test_a_capped_race_says_what_it_was_predicted_to_take_and_how_far_it_went():
    status = race_status(_race(capped_to=17, predicted_s=80.4, requested=40, limit_s=40.0))
    assert not status.error
    assert "predicted to take 80 s" in status.text and "raced 17 of the 40 tokens" in status.text
    assert "(40 s, SPECVIZ_EVENT_TIMEOUT_S)" in status.text


def test_a_race_that_ran_to_its_end_has_no_message():
    assert race_status(RACE).text == ""


@pytest.mark.parametrize("lang", ["zh", "ja"])
def test_the_race_messages_speak_the_page_language(lang):
    status = race_status(_race(stopped_s=60.0), lang)
    assert "SPECVIZ_EVENT_TIMEOUT_S" in status.text and "stopped" not in status.text
