"""tools.bench's forward-only round: exactly the round's forwards, and the caches left as they started."""
import pytest

from specviz.engine.caches.cache import CachedModel
from specviz.tools.bench import forward_only_round_ms


def test_a_forward_only_round_is_gamma_draft_calls_and_one_verify(pair):
    gamma, rounds = 3, 5
    context = pair.encode("KING HENRY.") * 2
    draft, target = CachedModel(pair.draft, pair.vocab_size), CachedModel(pair.target, pair.vocab_size)
    ms = forward_only_round_ms(draft, target, context, gamma, rounds)
    assert ms > 0
    warm = 2  # two untimed rounds first
    assert draft.calls == 1 + (rounds + warm) * gamma  # the context once, then gamma 1-token calls a round
    assert target.calls == 1 + (rounds + warm)  # the context once, then one verify a round
    assert draft.seen == target.seen == len(context)  # both cropped back after every round


def test_the_engine_twins_are_the_pair_without_its_cpu_choices(monkeypatch):
    """`bench` times the target with plain nn.Linear layers and the draft in the pair's dtype beside the
    pair as the engine runs it: the twins compute the same function and leave the pair untouched."""
    from types import SimpleNamespace

    import torch
    from transformers import AutoConfig, LlamaForCausalLM

    from specviz.engine.models import cpu_linear
    from specviz.engine.models.cpu_linear import RowsFirstLinear, use_rows_first_linears
    from specviz.engine.models.draft_precision import convert_draft
    from specviz.tools.bench import engine_twins

    shape = dict(model_type="llama", hidden_size=32, intermediate_size=64, num_attention_heads=4,
                 num_key_value_heads=2, vocab_size=512, num_hidden_layers=2)
    torch.manual_seed(0)
    target, draft = LlamaForCausalLM(AutoConfig.for_model(**shape)), LlamaForCausalLM(AutoConfig.for_model(**shape))
    monkeypatch.setattr(cpu_linear, "MIN_MODEL_WEIGHTS", 1_000)
    assert use_rows_first_linears(target, torch.device("cpu")) > 0
    convert_draft(draft, target, torch.bfloat16)
    cpu = torch.device("cpu")
    pair = SimpleNamespace(target=target, draft=draft, dtype=torch.float32, draft_dtype=torch.bfloat16, device=cpu)
    plain, wide = engine_twins(pair)
    assert not any(isinstance(m, RowsFirstLinear) for m in plain.modules())
    assert isinstance(target.model.layers[0].mlp.up_proj, RowsFirstLinear)              # the pair is untouched
    assert all(p.dtype == torch.float32 for p in wide.parameters())
    assert isinstance(wide.model.layers[0].mlp.up_proj, RowsFirstLinear)  # as SPECVIZ_DRAFT_BF16=0 would load it
    assert draft.model.layers[0].mlp.up_proj.weight.dtype == torch.bfloat16
    ids = torch.tensor([[1, 2, 3]])
    with torch.no_grad():
        assert torch.allclose(plain(ids).logits, target(ids).logits, atol=1e-5)
    assert engine_twins(SimpleNamespace(target=draft, draft=draft, dtype=torch.float32, draft_dtype=torch.float32,
                                        device=cpu)) == (None, None)


def test_the_twin_of_a_bf16_target_has_float32_layers_and_sdpa():
    """Where the target's layers are bfloat16 (engine/models/target_precision.py), `bench` times a float32 copy
    with plain layers and plain sdpa: the same weights' values, the pair left as it was."""
    from types import SimpleNamespace

    import torch
    from transformers import AutoConfig, LlamaForCausalLM

    from specviz.engine.models.target_precision import ROWWISE, Bf16RowsLinear, convert_target
    from specviz.tools.bench import engine_twins

    shape = dict(model_type="llama", hidden_size=32, intermediate_size=64, num_attention_heads=4,
                 num_key_value_heads=2, vocab_size=512, num_hidden_layers=2, attn_implementation="sdpa")
    torch.manual_seed(0)
    target = LlamaForCausalLM(AutoConfig.for_model(**shape)).eval()
    convert_target(target)
    pair = SimpleNamespace(target=target, draft=target, dtype=torch.float32, draft_dtype=torch.float32,
                           device=torch.device("cpu"))
    plain, wide = engine_twins(pair)
    assert wide is None and plain.config._attn_implementation == "sdpa"
    assert target.config._attn_implementation == ROWWISE                                # the pair is untouched
    up, twin_up = target.model.layers[0].mlp.up_proj, plain.model.layers[0].mlp.up_proj
    assert isinstance(up, Bf16RowsLinear) and type(twin_up) is torch.nn.Linear
    assert twin_up.weight.dtype == torch.float32 and torch.equal(twin_up.weight, up.weight.float())
    ids = torch.tensor([[1, 2, 3]])
    with torch.no_grad():  # the same function but for the rounding of each layer's input to bfloat16
        assert torch.allclose(plain(ids).logits, target(ids).logits, atol=0.05)


@pytest.mark.slow  # a whole quick bench on a tiny pair
def test_run_bench_times_the_twins_beside_the_pair(monkeypatch, tmp_path):
    """On a tiny pair loaded as a large one would be on a bf16 CPU (bars lowered), `bench` reports the draft's
    dtype and the twins' per-call times in its JSON; each is a positive time."""
    from specviz.engine.models import cpu_linear, draft_precision
    from specviz.tools.bench import run_bench
    from tests.engine.feature_pair import save_feature_pair

    monkeypatch.setattr(draft_precision, "MIN_WEIGHTS", 1_000)
    monkeypatch.setattr(draft_precision, "cpu_computes_bf16", lambda: True)
    monkeypatch.setattr(cpu_linear, "MIN_MODEL_WEIGHTS", 10_000)
    monkeypatch.delenv("SPECVIZ_DRAFT_BF16", raising=False)
    draft, target = save_feature_pair(tmp_path)
    result = run_bench(draft=draft, target=target, device="cpu", gamma=2, quick=True)
    assert result["draft_dtype"] == "bfloat16" and result["dtype"] == "float32"
    for key in ("target_ms_plain_layers", "target_verify_ms_plain_layers", "draft_ms_in_pair_dtype"):
        assert result[key] > 0, key


@pytest.mark.slow  # the bench times 23 Steps
def test_the_live_counters_are_read_after_the_asked_steps_even_past_max_new_tokens(pair):
    """bench compares the page's counters with its own figure after LIVE_STEPS Steps: the run behind them
    is lengthened to hold that many rounds (here 3 rounds of up to 5 tokens against max_new_tokens 4), and
    at a gamma whose rounds would overflow the 256-token window it is held within the window."""
    from specviz.tools.bench import _ui_step_ratio

    out = _ui_step_ratio(pair, "KING.", dict(gamma=4, temperature=1.0, max_new_tokens=4), 0, steps=3)
    assert out["live_steps"] == 3 and out["live_speedup"] > 0
    wide = _ui_step_ratio(pair, "KING.", dict(gamma=16, temperature=1.0, max_new_tokens=4), 0, steps=20)
    assert 1 <= wide["live_steps"] <= 20 and wide["live_speedup"] > 0  # no "does not fit the context window"


def test_call_timer_blocks_add_up_and_leave_every_cache_at_its_context(pair):
    """bench spreads the cost model's timing blocks over its run: each block times `size` calls of every
    model (after two untimed ones), and every cache is cropped back to the context after each call."""
    from specviz.tools.bench import CallTimer

    context = pair.encode("KING HENRY.") * 2
    timer = CallTimer([(pair.draft, 1), (pair.target, 1), (pair.target, 4)], pair.vocab_size, context)
    timer.block(3)
    timer.block(2)
    assert [len(t) for t in timer.times] == [5, 5, 5] and timer.done == 5
    assert all(c.seen == len(context) for c in timer.cached)
    assert [c.calls for c in timer.cached] == [1 + 5 + 2 * 2] * 3  # the context, 5 timed and 2 warm-ups a block
    assert all(ms > 0 for ms in timer.medians_ms())


def test_round_timer_spread_over_a_run_times_every_round_it_is_asked_for(pair):
    """bench runs a few forward-only rounds after each decoding run: each call adds its rounds (after two
    untimed ones) and leaves both caches at the context."""
    from specviz.tools.bench import RoundTimer

    gamma, context = 2, pair.encode("KING HENRY.") * 2
    draft, target = CachedModel(pair.draft, pair.vocab_size), CachedModel(pair.target, pair.vocab_size)
    timer = RoundTimer(draft, target, context, gamma)
    timer.rounds(3)
    timer.rounds(4)
    assert len(timer.times) == 7 and timer.done == 7 and timer.median_ms() > 0
    assert target.calls == 1 + 7 + 2 * 2 and draft.calls == 1 + (7 + 2 * 2) * gamma
    assert draft.seen == target.seen == len(context)


def test_a_bad_gamma_or_seed_is_refused_before_any_model_loads(monkeypatch):
    """`bench --gamma 0` names the setting at once; a hub preset would otherwise first try the hub."""
    import pytest

    from specviz.tools import bench

    def no_load(*args, **kwargs):
        raise AssertionError("a model was loaded before the settings were checked")

    monkeypatch.setattr(bench, "load_pair", no_load)
    for kwargs, setting in (({"gamma": 0}, "gamma"), ({"gamma": 17}, "gamma"), ({"seed": -1}, "seed")):
        with pytest.raises(ValueError, match=setting):
            bench.run_bench(preset="smollm2", quick=True, **kwargs)
