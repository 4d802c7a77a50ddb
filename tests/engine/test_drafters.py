"""The drafter interface: a new drafter is a class and one `register` line, and every layer takes it.

The toy drafter below proposes the context's last token gamma times (a function of the context: q is a point
mass). Registered under "repeat", it runs through the compared run, the race, the step card and `report`
unchanged, and its output law is the target's (greedy parity, and a seeded chi-square of the first token).
"""
from __future__ import annotations

import json

import pytest

from specviz.core.config import DecodeConfig
from specviz.core.trace import StepTrace
from specviz.core.tracefile import read_recording
from specviz.engine.decoding.drafters import DRAFTERS, drafter_class, register
from specviz.engine.decoding.drafting import Drafted, ModelFreeDrafter, TokenContext
from specviz.engine.models.presets import pair_ref
from specviz.engine.serving.race import run_race
from specviz.engine.serving.run import ComparedRun, RunSettings
from specviz.present import render
from specviz.tools.report import run_report
from tests.engine.first_token import first_token_pvalue
from tests.engine.greedy import greedy_parity

PROMPT = "KING.\nNow is the time"


class RepeatLast(ModelFreeDrafter):
    """Proposes the last token of the context gamma times; holds no model and no cache."""

    @classmethod
    def verify_sizes(cls, gamma: int) -> list[int]:
        return [gamma + 1]

    def propose(self, context: TokenContext, gamma: int) -> Drafted:
        last = context.tail(len(context.ids) - 1)  # [1] on the device
        return Drafted(tokens=last.expand(gamma).clone(), probs=None, detail={"repeated": context.ids[-1]})


@pytest.fixture
def repeat():
    register("repeat", RepeatLast)
    yield DecodeConfig(drafter="repeat", gamma=3, max_new_tokens=12, seed=3)
    del DRAFTERS["repeat"]


def test_a_registered_drafter_steps_in_the_compared_run_and_tells_its_source(repeat):
    run = ComparedRun(RunSettings(pair=pair_ref("shakespeare"), prompt=PROMPT, config=repeat, device="cpu"),
                      stateless=False)
    for _ in range(3):
        run.step()
    traces = run.traces
    assert [t.source.kind for t in traces] == ["repeat"] * 3
    assert all(p.draft_token == t.source.details["repeated"] and p.draft_prob == 1.0 for t in traces for p in t.positions)
    assert traces[-1].counters.draft_calls == 0  # no draft model ran
    assert run.kv_bytes() > 0 and run.metrics()["steps"] == 3


def test_a_registered_drafter_races(repeat):
    race = run_race(RunSettings(pair=pair_ref("shakespeare"), prompt=PROMPT, config=repeat, device="cpu"),
                    speculative_first=True)
    assert len(race.speculative.texts) == len(race.target_only.texts) == repeat.max_new_tokens
    assert race.speculative.draft_passes == 0 and race.speculative.target_passes <= repeat.max_new_tokens


def test_the_card_tells_a_drafter_it_has_no_view_for_by_name(repeat, pair):
    from specviz.engine.decoding.factory import make_decoder

    trace = make_decoder(pair, PROMPT, repeat).step()
    card, story = render.step_card(trace), render.narration(trace)
    assert "the drafter “repeat” proposed 3" in card and "min(1, p/q)" in card
    assert "the drafter “repeat” proposed 3 tokens" in story
    assert "repeat" in render.step_card(trace, lang="zh") and "repeat" in render.step_card(trace, lang="ja")
    assert StepTrace.from_dict(json.loads(trace.to_json())) == trace


def test_report_runs_a_registered_drafter(repeat, tmp_path):
    summary = run_report([PROMPT], tmp_path, preset="shakespeare", device="cpu", gamma=3, max_new_tokens=8,
                         drafter="repeat")
    assert summary["settings"]["drafter"] == "repeat"
    recording = read_recording((tmp_path / "traces.jsonl").read_text())  # the header line, then one line a step
    traces = [trace for run in recording.runs for trace in run.traces]
    assert traces and all(t.source.kind == "repeat" for t in traces)


def test_a_registered_drafter_at_t0_emits_what_the_target_alone_does(repeat, pair):
    greedy_parity(pair, PROMPT, DecodeConfig(**{**repeat.__dict__, "temperature": 0, "max_new_tokens": 24}))


@pytest.mark.slow  # a long statistical test: hundreds of decoder runs
def test_a_registered_drafters_first_token_follows_the_target(repeat, pair):
    """RUNS = 400 seeded one-round runs at T = 1 of the toy drafter (every round verifies 3 repeated tokens);
    chi-square p > 1e-3 against the target's next-token distribution from a plain forward pass (power:
    tests/engine/first_token.py; the law of a one-hot q on real rows: test_lookup_decoder.py in bulk)."""
    config = DecodeConfig(**{**repeat.__dict__, "max_new_tokens": 1, "record": False})
    assert first_token_pvalue(pair, PROMPT, config) > 1e-3


@pytest.mark.parametrize("knobs, named", [({"drafter": "ngram"}, "drafter must be one of model, lookup"),
                                          ({"drafter": "lookup", "drafts": 2}, "drafter lookup"),
                                          ({"drafter": "lookup", "kl_budget": 0.1}, "drafter lookup")])
def test_the_registry_refuses_a_name_it_lacks_and_a_config_its_drafter_cannot_run(knobs, named):
    with pytest.raises(ValueError, match=named):
        drafter_class(DecodeConfig(**knobs))
