"""The command line's --drafter: generate with prompt lookup, and what bench refuses before any model loads."""
from __future__ import annotations

import json

from tests.tools.test_cli import run_cli

REPEATED = "KING.\nNow is the time.\nKING.\nNow is"


def test_generate_with_lookup_at_t0_prints_what_the_baseline_prints():
    args = ("generate", "--prompt", REPEATED, "--temperature", "0", "--max-new-tokens", "24", "--json")
    lookup = json.loads(run_cli(*args, "--drafter", "lookup").stdout)
    base = json.loads(run_cli(*args, "--baseline").stdout)
    assert lookup["token_ids"] == base["token_ids"]
    assert lookup["stats"]["target_calls"] < base["stats"]["target_calls"]
    assert all(step["source"]["kind"] == "lookup" for step in lookup["steps"])


def test_bad_drafter_settings_exit_with_one_line():
    for args, message in [(["generate", "--prompt", "x", "--drafter", "ngram"], "--drafter"),
                          (["generate", "--prompt", "x", "--drafter", "lookup", "--drafts", "2"], "drafter lookup"),
                          (["bench", "--drafter", "lookup", "--drafts", "2"], "--drafts"),
                          (["bench", "--drafter", "lookup", "--temperatures", "0,hot"], "--temperatures")]:
        out = run_cli(*args)
        assert out.returncode == 2 and message in out.stderr and "Traceback" not in out.stderr
        assert len(out.stderr.strip().splitlines()) == 1
