"""engine.caches.static_cache: the fixed-size KV cache the CUDA-graph path runs on gives the dynamic cache's logits,
moves positions (not shapes) after a rejection, and leaves the output law the target's.

On the CPU the static forward runs eagerly; with SPECVIZ_TEST_DEVICE=cuda the same tests run it as
captured CUDA graphs (the last tests check that graphs were used there)."""
from __future__ import annotations

import pytest
import torch

from specviz.core.config import DecodeConfig
from specviz.engine import settings
from specviz.engine.caches import static_cache
from specviz.engine.caches.cache import CachedModel
from specviz.engine.decoding.decoders import TargetOnlyDecoder
from specviz.engine.decoding.factory import make_decoder
from specviz.engine.models.shapes import ARCHITECTURES, random_model
from specviz.engine.settings import Deployment
from tests.engine import first_token
from tests.stats import chi_square_pvalue


def assert_close(a: torch.Tensor, b: torch.Tensor, what: str) -> None:
    """float32 (the CPU run): within 1e-4. float16 / bfloat16 (a GPU run): within 16 units in the last place
    at the logits' scale, since the two paths round differently at every layer (bf16's unit is 2^-7 of the
    value, 0.16 at a logit of 20): a wrong mask, position or scale moves logits by whole units, far beyond it."""
    if a.dtype == torch.float32:
        tolerance = 1e-4
    else:
        tolerance = 16 * torch.finfo(a.dtype).eps * b.float().abs().amax().clamp_min(1.0).item()
    gap = (a.float() - b.float()).abs().max().item()
    assert gap <= tolerance, f"{what}: {gap:.2e} > {tolerance:.2e} ({a.dtype})"


TEXT = "ROMEO.\nBut soft, what light through yonder window breaks? It is the east"


def test_static_logits_equal_the_dynamic_caches_through_forwards_and_crops(pair):
    ids = pair.encode(TEXT)
    dynamic = CachedModel(pair.target, pair.vocab_size)
    static = CachedModel(pair.target, pair.vocab_size, static_len=len(ids) + 8)
    # (new tokens, crop back to) as rounds do: prefill, verify 4, reject after 1, verify 3, reject none ...
    script = [(range(0, 10), None), (range(10, 14), 11), (range(11, 14), 12), (range(12, 17), 17),
              (range(17, 19), 17), (range(17, len(ids)), None)]
    for span, crop in script:
        a = dynamic.forward([ids[i] for i in span])
        b = static.forward([ids[i] for i in span])
        assert_close(a, b, f"tokens {span}")
        if crop is not None:
            dynamic.crop_to(crop)
            static.crop_to(crop)
        assert static.seen == dynamic.seen == static.static.length


def test_a_rejection_moves_the_write_position_and_keeps_the_buffers(pair):
    ids = pair.encode(TEXT)
    static = CachedModel(pair.target, pair.vocab_size, static_len=40)
    static.forward(ids[:12])
    layer = static.cache.layers[0]
    shape, address = tuple(layer.keys.shape), layer.keys.data_ptr()
    static.crop_to(7)
    assert [int(x.cumulative_length) for x in static.cache.layers] == [7] * len(static.cache.layers)
    static.forward(ids[7:10])
    assert static.seen == 10 and tuple(layer.keys.shape) == shape and layer.keys.data_ptr() == address


def test_a_forward_past_the_static_length_is_refused(pair):
    static = CachedModel(pair.target, pair.vocab_size, static_len=6)
    static.forward(pair.encode("KING.\nNow")[:4])
    with pytest.raises(RuntimeError, match="holds 6 positions"):
        static.forward([5, 6, 7])


@pytest.mark.parametrize("temperature", [0.0, 1.0])
@pytest.mark.parametrize("gamma", [1, 4])
def test_a_static_decoder_draws_the_same_tokens_as_a_dynamic_one(pair, temperature, gamma):
    """Same seed, same prompt: the same logits up to rounding give the same draws (at T = 0, greedy parity
    with the baseline as well)."""
    config = DecodeConfig(gamma=gamma, temperature=temperature, max_new_tokens=40, seed=7)
    runs = [make_decoder(pair, "KING.\nNow", config, static_cache=flag) for flag in (False, True)]
    for run in runs:
        run.run()
    assert runs[0].target.static is None and runs[1].target.static is not None
    assert runs[0].generated_ids == runs[1].generated_ids
    if temperature == 0:
        base = TargetOnlyDecoder(pair, "KING.\nNow", config, static_cache=True)
        base.run()
        assert base.generated_ids == runs[1].generated_ids


@pytest.mark.slow  # hundreds of rounds on the static cache
def test_the_token_after_rejections_follows_the_target_law_with_a_static_cache(pair):
    """RUNS = 400 seeded rounds (gamma = 3), each a fork of one static decoder that has run until a round
    rejected a draft (so stale keys sit past its length); chi-square p > 1e-3 of the first token each
    emits against the target's law at that position, from a plain forward (power: tests/engine/first_token.py;
    the rewound decoder of test_rewind.py asks the same of one decoder reseeded in place)."""
    config = DecodeConfig(gamma=3, max_new_tokens=60, seed=1, record=False)
    start = make_decoder(pair, "HAMLET.\nTo be, or not", config, static_cache=True)
    while start.counters.accepted == start.counters.examined:
        start.step()
    stale = start.target.cache.layers[0].keys[0, :, start.target.seen]  # a rejected draft's keys, never read
    assert stale.abs().sum() > 0
    with torch.inference_mode():
        expected = config.warp(pair.target(torch.tensor([start.tokens], device=pair.device)).logits[0, -1, : pair.vocab_size])
    counts = torch.zeros(pair.vocab_size)
    for seed in range(first_token.RUNS):
        run = start.fork(seed)
        run.step()
        counts[run.tokens[len(start.tokens)]] += 1
    assert chi_square_pvalue(counts.numpy(), expected.double().cpu().numpy()) > 1e-3


def test_several_drafts_keep_the_dynamic_cache(pair):
    tree = make_decoder(pair, "KING.\nNow", DecodeConfig(gamma=2, drafts=3, max_new_tokens=8), static_cache=True)
    tree.step()
    assert tree.cache_kind == "dynamic" and tree.graphs_off == "several drafts share one cache"


def test_the_plan_uses_graphs_only_on_cuda_and_honours_the_off_switch(pair, monkeypatch):
    models = [pair.target, pair.draft]
    for name in ("SPECVIZ_CUDA_GRAPHS", "SPECVIZ_STATELESS_STEPS", "SPACES_ZERO_GPU"):
        monkeypatch.delenv(name, raising=False)
    assert static_cache.plan(torch.device("cpu"), models) == (False, "not on a CUDA device")
    assert static_cache.plan(torch.device("cuda"), models) == (True, "")  # reads configs only: no GPU needed
    monkeypatch.setenv("SPECVIZ_CUDA_GRAPHS", "0")
    assert static_cache.plan(torch.device("cuda"), models) == (False, "SPECVIZ_CUDA_GRAPHS=0")
    monkeypatch.setenv("SPECVIZ_CUDA_GRAPHS", "1")
    monkeypatch.setenv("SPECVIZ_STATELESS_STEPS", "1")
    assert not static_cache.plan(torch.device("cuda"), models)[0]


def test_a_bad_off_switch_names_the_variable():
    with pytest.raises(ValueError, match="SPECVIZ_CUDA_GRAPHS must be 1, 0 or forwards"):
        Deployment.from_environ({"SPECVIZ_CUDA_GRAPHS": "sometimes"})


def test_attention_without_a_known_mask_is_not_run_static(pair, monkeypatch):
    monkeypatch.setattr(pair.target.config, "_attn_implementation", "flash_attention_2")
    assert "attention implementation 'flash_attention_2'" in static_cache.unsupported_reason(pair.target)
    with pytest.raises(ValueError, match="static_cache=True cannot run this pair: attention implementation"):
        make_decoder(pair, "KING.", DecodeConfig(max_new_tokens=4), static_cache=True)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="CUDA graphs need a CUDA device")
def test_on_cuda_the_decoders_replay_captured_graphs(pair, monkeypatch):
    monkeypatch.delenv("SPECVIZ_CUDA_GRAPHS", raising=False)
    if pair.device.type != "cuda":
        pytest.skip("run with SPECVIZ_TEST_DEVICE=cuda")
    config = DecodeConfig(gamma=4, temperature=0, max_new_tokens=40)
    spec = make_decoder(pair, "KING.\nNow", config)
    assert spec.cache_kind == "cuda graphs", spec.target.static.graph_error or spec.graphs_off
    assert set(spec.target.static.captured) == {5} and spec.capture_s > 0
    spec.run()
    eager = make_decoder(pair, "KING.\nNow", config, static_cache=False)
    eager.run()
    assert spec.generated_ids == eager.generated_ids
    monkeypatch.setenv("SPECVIZ_CUDA_GRAPHS", "0")
    assert make_decoder(pair, "KING.\nNow", config).cache_kind == "dynamic"


@pytest.mark.parametrize("preset", sorted(ARCHITECTURES))
def test_every_preset_architecture_runs_on_the_static_cache(preset):
    """Each hub preset's architecture (shrunk, random weights): static logits equal the dynamic cache's
    through a prefill, a verify and a crop, so the graph path has nothing architecture-specific to fear."""
    shape = {k: v for k, v in ARCHITECTURES[preset][1].items()}
    small = dict(n_layer=2, n_embd=64, n_head=2) if shape["model_type"] == "gpt2" else dict(
        num_hidden_layers=2, hidden_size=64, num_attention_heads=4, intermediate_size=128,
        **({"num_key_value_heads": 2} if "num_key_value_heads" in shape else {}))
    model = random_model({**shape, **small, "vocab_size": 512}, torch.float32, "cpu", seed=0)
    assert static_cache.unsupported_reason(model) == ""
    ids = torch.randint(0, 512, (20,), generator=torch.Generator().manual_seed(0)).tolist()
    dynamic, static = CachedModel(model, 512), CachedModel(model, 512, static_len=24)
    for span, crop in ((range(0, 12), None), (range(12, 16), 13), (range(13, 20), None)):
        a, b = dynamic.forward([ids[i] for i in span]), static.forward([ids[i] for i in span])
        assert_close(a, b, f"{preset} {span}")
        if crop:
            dynamic.crop_to(crop)
            static.crop_to(crop)


def test_a_crop_outside_inference_mode_moves_write_positions_made_inside_it(pair):
    """On CUDA the prefill (in inference mode) leaves each layer's write position an inference tensor;
    the decoder crops outside inference mode. The forward (in inference mode, here too) makes the layers' shared
    write position, so it is an inference tensor on every device; the crop must still move it."""
    static = CachedModel(pair.target, pair.vocab_size, static_len=20)
    static.forward(pair.encode("KING.\nNow is the")[:6])
    assert static.cache.layers[0].cumulative_length.is_inference()
    static.crop_to(3)
    assert [int(x.cumulative_length) for x in static.cache.layers] == [3] * len(static.cache.layers)


def test_the_cache_kind_names_each_model_when_they_differ(pair):
    """A draft whose capture failed runs eagerly while the target replays graphs: the report says both,
    never "cuda graphs" alone. Faked alike on every device: both models start without graphs (on CUDA the
    real captures are dropped, on the CPU there are none), then the target gets a captured entry."""
    spec = make_decoder(pair, "KING.\nNow", DecodeConfig(gamma=2, max_new_tokens=4), static_cache=True)
    on_cuda = torch.device(pair.device).type == "cuda" and settings.current().cuda_graphs
    graphs = "cuda graphs" if on_cuda else "static"  # CUDA captures unless SPECVIZ_CUDA_GRAPHS=0
    assert spec.cache_kind == graphs
    spec.target.static.captured.clear()
    spec.drafter.model.static.captured.clear()
    assert spec.cache_kinds == {"draft": "static", "target": "static"} and spec.cache_kind == "static"
    spec.target.static.captured[3] = object()
    assert spec.cache_kinds == {"draft": "static", "target": "cuda graphs"}
    assert spec.cache_kind == "draft: static, target: cuda graphs"
    spec.drafter.model.static.graph_error = "CUDA graph capture failed: the replayed 1-token forward differs"
    spec._note_graph_error("draft", spec.drafter.model)
    assert spec.graphs_off.endswith("draft: CUDA graph capture failed: the replayed 1-token forward differs")
    base = TargetOnlyDecoder(pair, "KING.\nNow", DecodeConfig(gamma=2, max_new_tokens=4), static_cache=True)
    assert base.cache_kinds == {"target": graphs}
