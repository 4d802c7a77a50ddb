"""The command line's --drafts: generate with a token tree, and one-line errors for bad values."""
from __future__ import annotations

import json

from tests.tools.test_cli import run_cli


def test_generate_with_drafts_prints_tree_steps():
    out = run_cli("generate", "--prompt", "KING.", "--gamma", "2", "--drafts", "3", "--max-new-tokens", "10", "--json")
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert len(data["token_ids"]) == 10
    step = data["steps"][0]
    assert step["drafts"] == 3 and {"nodes", "tries", "path"} <= set(step["tree"])
    assert data["stats"]["drafts"] == 3 and len(data["stats"]["acceptance_by_depth"]) == 2


def test_bad_drafts_are_one_line_errors():
    for args, message in [(["generate", "--prompt", "x", "--drafts", "9"], "drafts must be a whole number in 1..8"),
                          (["generate", "--prompt", "x", "--drafts", "2", "--kl-budget", "0.1"], "kl_budget"),
                          (["bench", "--drafts", "1,x"], "--drafts must be a comma-separated list"),
                          (["bench", "--drafts", "0,2"], "drafts must be a whole number in 1..8")]:
        out = run_cli(*args)
        assert out.returncode == 2 and message in out.stderr and "Traceback" not in out.stderr, (args, out.stderr)
        assert len(out.stderr.strip().splitlines()) == 1
