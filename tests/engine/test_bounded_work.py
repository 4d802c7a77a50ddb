"""Work per request bounded by what it costs: the prompt's tokens, the trained window, one prefill per run."""
from __future__ import annotations

from types import SimpleNamespace

import pytest

from specviz.core.config import DecodeConfig
from specviz.engine.decoding.decoders import SpeculativeDecoder, TargetOnlyDecoder
from specviz.engine.models.loading import _context_window
from specviz.engine.models.policy import prompt_token_limit
from specviz.engine.models.presets import PRESETS, pair_ref
from specviz.engine.serving.run import ComparedRun, RunSettings

PROMPT = "KING.\nNow is the time to speak of kings and queens, " * 3


def _settings(prompt: str = PROMPT, **config) -> RunSettings:
    return RunSettings(pair=pair_ref("shakespeare"), prompt=prompt,
                       config=DecodeConfig(**{"gamma": 4, "max_new_tokens": 30, "seed": 7, **config}), device="cpu")


class Forwards:
    """Counts the target's forwards by how many new tokens each took (a forward pre-hook, no engine code)."""

    def __init__(self, model):
        self.sizes: list[int] = []
        self.handle = model.register_forward_pre_hook(self._seen, with_kwargs=True)

    def _seen(self, _module, args, kwargs):
        ids = kwargs.get("input_ids", args[0] if args else None)
        embeds = kwargs.get("inputs_embeds")
        self.sizes.append((ids if ids is not None else embeds).shape[1])

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.handle.remove()


def test_a_prompt_over_the_token_limit_is_refused_with_its_count_before_any_forward(pair, monkeypatch):
    monkeypatch.setenv("SPECVIZ_MAX_PROMPT_TOKENS", "12")
    tokens = len(pair.tokenizer(PROMPT, add_special_tokens=False)["input_ids"])
    assert tokens > 12
    with Forwards(pair.target) as target, Forwards(pair.draft) as draft, pytest.raises(ValueError) as err:
        ComparedRun(_settings(), stateless=False)
    assert f"the prompt is {tokens:,} tokens" in str(err.value) and "the limit is 12" in str(err.value)
    assert "SPECVIZ_MAX_PROMPT_TOKENS" in str(err.value)
    assert target.sizes == [] and draft.sizes == []


def test_a_gamma_auto_prompt_over_the_limit_is_refused_before_its_rule_is_measured(pair, monkeypatch):
    """A first gamma auto Step measures the pair's draft length rule (a probe run of forwards): a prompt the run
    refuses anyway must not make the server measure first (a visitor's 523-token prompt cost 9.7 s so)."""
    from specviz.engine.serving import auto_gamma

    monkeypatch.setenv("SPECVIZ_MAX_PROMPT_TOKENS", "12")
    monkeypatch.setattr(auto_gamma, "_RULES", auto_gamma.OrderedDict())  # nothing measured yet in this process
    with Forwards(pair.target) as target, Forwards(pair.draft) as draft, pytest.raises(ValueError) as err:
        ComparedRun(_settings(gamma=4, gamma_auto=True), stateless=False)
    assert "SPECVIZ_MAX_PROMPT_TOKENS" in str(err.value)
    assert target.sizes == [] and draft.sizes == [] and not auto_gamma._RULES


def test_a_prompt_at_the_limit_runs(pair, monkeypatch):
    tokens = len(pair.tokenizer(PROMPT, add_special_tokens=False)["input_ids"])
    monkeypatch.setenv("SPECVIZ_MAX_PROMPT_TOKENS", str(tokens))
    run = ComparedRun(_settings(), stateless=False)
    run.step()
    assert len(run.spec.prompt_ids) == tokens


def test_each_pair_has_its_own_limit_unless_the_knob_sets_one(monkeypatch):
    monkeypatch.delenv("SPECVIZ_MAX_PROMPT_TOKENS", raising=False)
    assert prompt_token_limit(PRESETS["smollm2-local"]) == 512
    assert prompt_token_limit(pair_ref(draft="a/b", target="c/d")) == 512  # an own pair: the chat pair's budget
    monkeypatch.setenv("SPECVIZ_MAX_PROMPT_TOKENS", "300")
    assert prompt_token_limit(PRESETS["smollm2-local"]) == prompt_token_limit(PRESETS["shakespeare"]) == 300


@pytest.mark.parametrize("value", ["0", "-5", "1.5", "many"])
def test_a_bad_token_limit_names_the_variable(monkeypatch, value):
    monkeypatch.setenv("SPECVIZ_MAX_PROMPT_TOKENS", value)
    with pytest.raises(ValueError, match="SPECVIZ_MAX_PROMPT_TOKENS must be a whole number"):
        prompt_token_limit(PRESETS["shakespeare"])


def _model(**config):
    text = SimpleNamespace(**config)
    return SimpleNamespace(config=SimpleNamespace(get_text_config=lambda: text))


def test_the_window_is_the_trained_one_where_the_config_records_it():
    stretched = _model(max_position_embeddings=32_768,
                       rope_parameters={"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 8_192})
    assert _context_window(stretched) == 8_192
    assert _context_window(_model(max_position_embeddings=32_768, original_max_position_embeddings=4_096)) == 4_096
    assert _context_window(_model(max_position_embeddings=8_192, rope_parameters={"rope_type": "default"})) == 8_192
    assert _context_window(_model(n_positions=256)) == 256


def test_a_runs_start_prefills_the_target_once(pair):
    with Forwards(pair.target) as target:
        run = ComparedRun(_settings(), stateless=False)
    n_prompt = len(run.spec.prompt_ids)
    assert target.sizes.count(n_prompt - 1) == 1, target.sizes  # the prefill: every prompt token but the pending one
    assert run.base.prefill_s == 0.0 and run.spec.prefill_s > 0


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_shared_prefill_changes_no_token_of_the_baseline(pair, seed):
    config = DecodeConfig(gamma=4, max_new_tokens=40, seed=seed)
    spec = SpeculativeDecoder(pair, PROMPT, config)
    shared = TargetOnlyDecoder(pair, PROMPT, config, prefilled=spec)
    alone = TargetOnlyDecoder(pair, PROMPT, config)
    spec.run()  # the speculative side steps first: the copy must not follow its cache
    shared.run()
    alone.run()
    assert shared.tokens == alone.tokens and shared.counters.target_calls == alone.counters.target_calls


def test_a_run_woken_from_hibernation_still_gives_the_same_tokens(pair):
    settings = _settings(max_new_tokens=24)
    straight, woken = ComparedRun(settings, stateless=False), ComparedRun(settings, stateless=False)
    while not straight.finished:
        straight.step()
    while not woken.finished:
        woken.step()
        woken.hibernate()
    assert woken.tokens == straight.tokens and woken.baseline_tokens() == straight.baseline_tokens()
