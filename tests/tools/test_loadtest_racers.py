"""The racers scenario, short (`loadtest --attacks`): visitors racing back to back never stall a light Step."""
from __future__ import annotations

import io

import pytest

from specviz.tools.racers import racers_text, run_racers

# a load test: a server of its own and visitors racing for minutes;
# early: it loads both cores, so it runs first, beside the laws, never beside a chromium test (browser tests
# beside it failed in four of six full runs, docs/contributing.md)
pytestmark = [pytest.mark.slow, pytest.mark.early]


def test_racers_never_stall_a_light_step_and_memory_comes_back():
    # the bundled pair as both: the longest race it allows (200 tokens, gamma 16, 8 drafts), 1 then 3 racers for
    # 4 s each with a Step every second, then 2 such races in a row; a 5 s deadline so that races may meet it
    out = run_racers(heavy="shakespeare", light="shakespeare", racers=(1, 3), seconds=4, series=2, every_s=1.0,
                     env={"SPECVIZ_EVENT_TIMEOUT_S": "5"}, progress=io.StringIO())
    print(racers_text(out))
    for phase in out["phases"]:
        assert phase["light_lost"] == 0 and phase["light_steps"] >= 1, phase
        assert phase["light_max_s"] < 20, phase  # a slice at a time, never a whole race (or a queue of them)
        ended = sum(phase[f"races_{kind}"] for kind in ("completed", "capped", "stopped", "busy"))
        assert ended >= 1 and phase["races_other"] == 0, phase
    assert len(out["series_s"]) == 2 and "other" not in out["series_endings"], out
    assert out["rss_after_mib"] - out["rss_before_mib"] < 300, out
    assert "light Step median" in racers_text(out)


def test_bad_racer_settings_are_one_error_line_before_any_server_starts():
    from tests.tools.test_cli import run_cli

    for args, message in [(["--attacks", "--race-seconds", "0"], "--race-seconds must be a number in [1, 3600], not 0"),
                          (["--attacks", "--race-seconds", "nan"], "--race-seconds must be a number in [1, 3600]"),
                          (["--race-vs-bench", "0"], "races must be a whole number in 1..100, not 0")]:
        out = run_cli("loadtest", *args)
        assert out.returncode == 2 and message in out.stderr and "Traceback" not in out.stderr, out.stderr
