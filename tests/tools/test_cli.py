"""The command-line contract: python -m specviz generate ... --json."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.cli_runner import run_cli


def test_generate_json_contract():
    out = run_cli("generate", "--prompt", "ROMEO.\n", "--gamma", "3", "--max-new-tokens", "20", "--seed", "1", "--json")
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert set(data) >= {"text", "token_ids", "steps", "stats"}
    assert len(data["token_ids"]) == 20 and 0 not in data["token_ids"]  # this seed never samples EOS (id 0)
    assert set(data["stats"]) >= {"acceptance_rate", "mean_acceptance_length", "per_position_acceptance",
                                  "target_calls", "draft_calls", "tokens_per_target_call", "wall_s"}
    assert len(data["stats"]["per_position_acceptance"]) == 3
    assert data["stats"]["draft_calls"] == 3 * data["stats"]["target_calls"] == 3 * len(data["steps"])
    step = data["steps"][0]
    assert {"positions", "correction", "emitted", "counters", "draft_ms", "target_ms"} <= set(step)
    assert {"uniform", "accept_prob", "verdict", "candidates", "tv", "kl"} <= set(step["positions"][0])


def test_generation_stops_right_after_eos(pair):
    """The other case of the contract: a round whose tokens include EOS keeps EOS and nothing after it."""
    from specviz.core.config import DecodeConfig
    from specviz.engine.decoding.decoders import SpeculativeDecoder

    dec = SpeculativeDecoder(pair, "KING.", DecodeConfig(gamma=3, max_new_tokens=30))
    eos = pair.tokenizer.eos_token_id
    assert dec._accept_new([5, eos, 7]) == [5, eos]
    assert dec.generated_ids == [5, eos] and dec.finished


def test_generate_is_reproducible_by_seed_and_baseline_runs():
    a = json.loads(run_cli("generate", "--prompt", "KING.", "--max-new-tokens", "15", "--seed", "4", "--json").stdout)
    b = json.loads(run_cli("generate", "--prompt", "KING.", "--max-new-tokens", "15", "--seed", "4", "--json").stdout)
    assert a["token_ids"] == b["token_ids"]
    base = json.loads(run_cli("generate", "--prompt", "KING.", "--max-new-tokens", "15", "--baseline", "--json").stdout)
    assert base["stats"]["target_calls"] == len(base["token_ids"]) and base["steps"] == []


def test_bad_input_exits_with_a_clear_message():
    for args, message in [(["--prompt", ""], "empty"), (["--prompt", "x", "--gamma", "0"], "gamma"),
                          (["--prompt", "x", "--temperature", "-1"], "temperature")]:
        out = run_cli("generate", *args)
        assert out.returncode == 2 and message in out.stderr and "Traceback" not in out.stderr


@pytest.mark.slow  # a fresh interpreter with gradio blocked
def test_engine_bench_and_report_need_no_gradio():
    """The layers below the UI import without gradio, and the bench's UI timing runs with gradio blocked."""
    code = """
import sys
sys.modules['gradio'] = None  # any import of gradio now fails
import specviz.core.sampling, specviz.engine.decoding.decoders, specviz.engine.models.loading
import specviz.engine.serving.run
import specviz.present.views, specviz.tools.bench, specviz.tools.report

from specviz.engine.models.loading import load_pair
out = specviz.tools.bench._ui_step_ratio(load_pair('shakespeare'), 'KING.', dict(gamma=4, temperature=1.0, max_new_tokens=20), 0, steps=2)
assert out['ui_step_ms'] > 0 and out['engine_step_ms'] > 0, out
print('ok')
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0 and out.stdout.strip().endswith("ok"), out.stderr[-1500:]


@pytest.mark.slow  # a load test: a server process of its own
def test_loadtest_small_isolation_and_no_errors():
    """The load test's small version (a server process of its own): 2 sessions x 3 Steps at once
    equal their solo runs, every phase served every Step, no errors, memory sampled."""
    import os

    from specviz.tools.loadtest import run_loadtest

    with open(os.devnull, "w") as quiet:
        out = run_loadtest(sessions=2, steps=3, churn=2, churn_steps=2, progress=quiet)
    assert out["errors"] == 0 and out["sessions_identical_to_solo"] == 2
    assert out["solo"]["steps"] == out["pair"]["steps"] == out["loaded"]["steps"] == 6
    assert out["loaded"]["steps_per_s"] > 0 and len(out["churn"]["rss_mib"]) == 2 and out["churn"]["rss_after_mib"] > 0


# In a fresh interpreter: each case's exit status and stderr, then which heavy packages parsing loaded.
PARSE_ONLY = """
import contextlib, io, json, sys
from specviz.tools.cli import main
required = {"generate": ["--prompt", "x"], "bench": [], "report": ["--out", "x"], "whatif": [], "loadtest": [],
            "replay": ["trace.jsonl"]}  # so that the flag, not a missing argument, is what is refused
cases = [[sub, *given, flag] for sub, given in required.items() for flag in ("--no-such-flag", "--help")]
cases += [["bench", "--gama", "3"], ["report", "--gamma", "1,2,auto", "--out", "x", "--preset", "smollm2", "--typo"]]
told = []
for case in cases:
    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        try:
            code = main(case)
        except SystemExit as stop:
            code = stop.code
    told.append([case, code, err.getvalue()])
heavy = [name for name in ("torch", "transformers", "gradio", "plotly") if name in sys.modules]
print(json.dumps({"told": told, "heavy": heavy}))
"""


def test_a_typo_and_help_are_answered_before_torch_transformers_gradio_or_plotly_load():
    """Parsing reads names only: every subcommand cli parses refuses a bad flag in one line (exit 2) and shows
    --help (exit 0) with none of the heavy packages imported, one interpreter for all the cases."""
    out = subprocess.run([sys.executable, "-c", PARSE_ONLY], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-1500:]
    found = json.loads(out.stdout)
    assert found["heavy"] == []
    for case, code, stderr in found["told"]:
        if case[-1] == "--help":
            assert code == 0 and stderr == "", case
        else:
            assert code == 2 and stderr.startswith("error: unrecognized arguments: ") and stderr.count("\n") == 1, \
                (case, stderr)


def test_the_names_the_command_line_offers_are_the_registries():
    """The parser offers preset and drafter names without importing the registries: the same names, in order."""
    from specviz.engine.decoding.drafter_names import DEFAULT_DRAFTER, DRAFTER_NAMES
    from specviz.engine.decoding.drafters import DRAFTERS, HybridDraft, ModelDraft, PromptLookup
    from specviz.engine.models.preset_names import PRESET_NAMES
    from specviz.engine.models.presets import PRESETS

    assert tuple(PRESETS) == PRESET_NAMES and tuple(DRAFTERS) == DRAFTER_NAMES
    assert (ModelDraft.kind, PromptLookup.kind, HybridDraft.kind) == DRAFTER_NAMES
    assert DEFAULT_DRAFTER == ModelDraft.kind


def test_a_finished_decoder_is_told_in_its_own_words_and_a_failing_model_in_one_line():
    from specviz.engine.decoding.decoders import DecodingFinished
    from specviz.engine.models.presets import ModelLoadError
    from specviz.tools.cli_values import refusal

    assert refusal(DecodingFinished("the run has finished")) == "the run has finished"
    assert refusal(ModelLoadError("unknown preset 'x'")) == "unknown preset 'x'"
    assert refusal(RuntimeError("CUDA out of memory.\nTried to allocate")) == "the models failed: CUDA out of memory."
    assert refusal(OSError(28, "No space left on device", "out/report.html")) == \
        "No space left on device: out/report.html"
