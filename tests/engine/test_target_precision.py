"""engine/models/target_precision.py: a bfloat16 target whose verify has the bits of target-only decoding."""
from __future__ import annotations

import math

import pytest
import torch
from transformers import LlamaConfig, LlamaForCausalLM

from specviz.engine.caches.cache import CachedModel
from specviz.engine.models import target_precision
from specviz.engine.models.draft_precision import cpu_computes_bf16
from specviz.engine.models.target_precision import Bf16RowsLinear, bf16_target_pays, convert_target, rowwise_attention

pytestmark = pytest.mark.cpu_only  # oneDNN's CPU kernels: on a GPU the target stays as loaded
# the bits of bfloat16 products: native kernels (the only ones the engine converts a target for), not torch's emulation
native_bf16 = pytest.mark.skipif(not cpu_computes_bf16(), reason="no native bfloat16 here: the target stays float32")

VOCAB = 300


def tiny_target(seed: int = 0) -> LlamaForCausalLM:
    """Two of SmolLM2-135M's layers (9 query heads, 3 key heads, its widths and rope) over a 300-token vocabulary
    with a tied head: 7M weights, the geometry at which plain sdpa's bits depend on the pass's length."""
    torch.manual_seed(seed)
    config = LlamaConfig(vocab_size=VOCAB, hidden_size=576, intermediate_size=1536, num_hidden_layers=2,
                         num_attention_heads=9, num_key_value_heads=3, tie_word_embeddings=True,
                         rope_theta=100000.0, attn_implementation="sdpa")
    return LlamaForCausalLM(config).eval()


def converted(seed: int = 0) -> LlamaForCausalLM:
    model = tiny_target(seed)
    assert convert_target(model) == 2 * 7 + 1  # 7 linear layers a layer, and the head
    return model


CONTEXT = [(7 * i) % 290 + 3 for i in range(128)]  # a prompt's worth, as the verify timer's context
NEW = [7, 250, 19, 19, 4, 101, 55, 8, 200]


def one_at_a_time(model, new: list[int]) -> torch.Tensor:
    cache = CachedModel(model, VOCAB)
    cache.forward(CONTEXT)
    return torch.cat([cache.forward([token]) for token in new])  # [n, V]


@native_bf16
@pytest.mark.parametrize("rows", [1, 3, 4, 9])
def test_a_bf16_linear_rows_bits_do_not_depend_on_the_other_rows(rows):
    torch.manual_seed(rows)
    layer = Bf16RowsLinear(torch.nn.Linear(64, 1000))
    hidden = torch.randn(9, 64)
    alone = torch.cat([layer(hidden[i:i + 1]) for i in range(rows)])
    assert torch.equal(layer(hidden[:rows]), alone)
    # the product written out in float64 from the rounded operands: within bfloat16's rounding of the result
    exact = (hidden[:rows].bfloat16().double() @ layer.weight.double().T + layer.bias.double())
    assert layer(hidden[:rows]).dtype == torch.float32
    assert torch.allclose(alone.double(), exact, rtol=2 ** -7, atol=1e-3)


@native_bf16
@pytest.mark.parametrize("n", [2, 5, 9])
def test_a_verify_pass_has_the_bits_of_one_position_passes(n):
    model = converted()
    cache = CachedModel(model, VOCAB)
    cache.forward(CONTEXT)
    assert torch.equal(cache.forward(NEW[:n]), one_at_a_time(model, NEW[:n]))


@native_bf16
@pytest.mark.parametrize("model_type", target_precision.CHECKED_TYPES)
def test_every_checked_family_verifies_with_the_bits_of_one_position_passes(model_type):
    from transformers import AutoConfig, AutoModelForCausalLM

    torch.manual_seed(0)
    config = AutoConfig.for_model(model_type, vocab_size=VOCAB, hidden_size=128, intermediate_size=256,
                                  num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                                  attn_implementation="sdpa")
    model = AutoModelForCausalLM.from_config(config).eval()
    assert convert_target(model) > 0
    cache = CachedModel(model, VOCAB)
    cache.forward(CONTEXT)
    assert torch.equal(cache.forward(NEW), one_at_a_time(model, NEW))


def test_attention_it_does_not_compute_is_refused():
    query = key = value = torch.zeros(1, 2, 3, 4)
    with pytest.raises(ValueError, match="softcap"):
        rowwise_attention(None, query, key, value, None, softcap=30.0)


@native_bf16
def test_without_one_query_attention_the_bits_differ():
    """The reason for `rowwise_attention`: with bfloat16 linear layers and plain sdpa a verify's logits are not
    target-only's (seed 0: off by 0.004 here), which the test above would catch."""
    model = converted()
    model.set_attn_implementation("sdpa")
    cache = CachedModel(model, VOCAB)
    cache.forward(CONTEXT)
    assert not torch.equal(cache.forward(NEW), one_at_a_time(model, NEW))


@native_bf16
def test_the_static_cache_gives_the_bits_of_the_dynamic_one():
    """The CUDA-graph path's static cache passes its own boolean mask over a longer key buffer (stale keys masked):
    the same keys a query sees, so the same bits, through a verify, a rejection's crop and the next verify."""
    model = converted(2)
    caches = [CachedModel(model, VOCAB), CachedModel(model, VOCAB, static_len=len(CONTEXT) + 16)]
    logits = []
    for cache in caches:
        cache.forward(CONTEXT)
        first = cache.forward(NEW[:5])
        cache.crop_to(len(CONTEXT) + 2)
        logits.append(torch.cat([first, cache.forward(NEW[5:9])]))
    assert torch.equal(logits[0], logits[1])


def test_a_missing_mask_over_an_empty_longer_buffer_is_read_as_sdpa_reads_it():
    """transformers drops the mask of a first pass over an empty static buffer: query i then sees keys 0..i."""
    torch.manual_seed(4)
    query, key, value = torch.randn(1, 2, 3, 8), torch.randn(1, 2, 7, 8), torch.randn(1, 2, 7, 8)
    out, _ = rowwise_attention(None, query, key, value, None)
    expected = torch.nn.functional.scaled_dot_product_attention(query, key[:, :, :3], value[:, :, :3], is_causal=True)
    assert torch.allclose(out, expected.transpose(1, 2), atol=1e-6)


@native_bf16
def test_this_cpu_computes_a_bf16_row_with_the_same_bits_whatever_rows_are_beside_it():
    assert target_precision.rows_are_independent()


@native_bf16
def test_drafts_scored_side_by_side_have_the_bits_of_each_one_alone():
    model = converted(1)
    drafts = [NEW[:4], NEW[4:8], [9, 9, 9, 9]]
    cache = CachedModel(model, VOCAB)
    cache.forward(CONTEXT)
    cache.expand(len(drafts))
    side_by_side = cache.forward_rows(drafts)  # [3, 4, V]
    for row, draft in enumerate(drafts):
        assert torch.equal(side_by_side[row], one_at_a_time(model, draft))


def test_a_query_that_sees_scattered_keys_attends_to_exactly_those():
    """A tree's mask: each query sees the context and its own branch, not a prefix of the keys."""
    torch.manual_seed(2)
    query, key, value = torch.randn(1, 4, 3, 8), torch.randn(1, 2, 6, 8), torch.randn(1, 2, 6, 8)
    seen = torch.tensor([[1, 1, 1, 0, 0, 0], [1, 1, 0, 1, 0, 0], [1, 1, 0, 1, 0, 1]], dtype=torch.bool)
    out, _ = rowwise_attention(None, query, key, value, seen[None, None], scaling=0.5)  # [1, 3, 4, D]
    for i in range(3):
        for head in range(4):
            keys = [j for j in range(6) if seen[i, j]]
            scores = [0.5 * float(query[0, head, i] @ key[0, head // 2, j]) for j in keys]  # 2 query heads a key
            top = max(scores)
            weights = [math.exp(s - top) for s in scores]
            expected = sum(w * value[0, head // 2, j] for w, j in zip(weights, keys)) / sum(weights)
            assert torch.allclose(out[0, i, head], expected, atol=1e-5)


def test_a_verify_pass_reads_its_mask_once_not_once_a_layer(monkeypatch):
    """Every layer gets the same mask: which keys each query sees is worked out at the first layer only."""
    reads = []
    read = target_precision._visible
    monkeypatch.setattr(target_precision, "_visible", lambda mask, *shape: reads.append(mask is not None) or
                        read(mask, *shape))
    model = tiny_target(3)
    model.set_attn_implementation(target_precision.ROWWISE)
    cache = CachedModel(model, VOCAB)
    cache.forward(CONTEXT)
    reads.clear()
    cache.forward(NEW[:5])  # a verify over 5 positions: a 4-D mask, two layers
    assert reads == [True]


def test_one_query_at_a_time_attends_as_sdpa_does_over_a_verify_pass():
    """The float32 model, one query at a time with its mask read once, against plain sdpa: the same logits."""
    model = tiny_target(6)
    plain = CachedModel(model, VOCAB)
    plain.forward(CONTEXT)
    expected = plain.forward(NEW)  # [9, V]
    model.set_attn_implementation(target_precision.ROWWISE)
    rowwise = CachedModel(model, VOCAB)
    rowwise.forward(CONTEXT)
    assert torch.allclose(rowwise.forward(NEW), expected, atol=1e-5)


def test_a_remembered_mask_written_to_is_read_again():
    """The mask a forward built, written to after a first layer read it, shows the next layer its new keys."""
    generator = torch.Generator().manual_seed(5)
    query, key, value = (torch.randn(1, 2, 2, 8, generator=generator), torch.randn(1, 2, 5, 8, generator=generator),
                         torch.randn(1, 2, 5, 8, generator=generator))
    mask = target_precision.rowwise_mask(batch_size=1, q_length=2, kv_length=5, q_offset=3)  # [1, 1, 2, 5]
    first, _ = rowwise_attention(None, query, key, value, mask)
    mask[0, 0, 0, 3] = False  # query 0 now sees keys 0..2
    second, _ = rowwise_attention(None, query, key, value, mask)
    fresh, _ = rowwise_attention(None, query, key, value, mask.clone())
    assert torch.equal(second, fresh) and not torch.equal(second[:, 0], first[:, 0])


@native_bf16
def test_greedy_decoding_over_verify_passes_writes_target_only_text():
    """At T = 0, taking the argmax of 5-position passes and of 1-position passes gives the same 12 tokens."""
    model = converted(3)
    single = CachedModel(model, VOCAB)
    single.forward(CONTEXT)
    text = [int(single.forward([CONTEXT[-1]]).argmax())]
    for _ in range(11):
        text.append(int(single.forward([text[-1]]).argmax()))
    batched = CachedModel(model, VOCAB)
    batched.forward(CONTEXT)
    logits = batched.forward([CONTEXT[-1]] + text[:4])  # the first 5 tokens' positions in one pass
    assert [int(x) for x in logits.argmax(-1)] == text[:5]


def test_the_converted_target_keeps_float32_embeddings_and_logits():
    model = converted()
    assert model.get_input_embeddings().weight.dtype == torch.float32
    assert model.model.layers[0].mlp.down_proj.weight.dtype == torch.bfloat16
    assert model.config._attn_implementation == target_precision.ROWWISE
    assert one_at_a_time(model, NEW[:2]).dtype == torch.float32


def test_it_applies_only_to_a_large_float32_sdpa_target_on_a_bf16_cpu(monkeypatch):
    cpu, f32 = torch.device("cpu"), torch.float32
    monkeypatch.setattr(target_precision, "cpu_computes_bf16", lambda: True)
    monkeypatch.setattr(target_precision, "MIN_MODEL_WEIGHTS", 10_000)
    model = tiny_target()
    assert bf16_target_pays(model, cpu, f32)
    assert not bf16_target_pays(model, cpu, f32, enabled=False)               # SPECVIZ_TARGET_BF16=0
    assert not bf16_target_pays(model, torch.device("cuda"), f32)
    assert not bf16_target_pays(model, cpu, torch.bfloat16)
    model.config._attn_implementation = "eager"
    assert not bf16_target_pays(model, cpu, f32)                              # only sdpa's masks are known
    model.config._attn_implementation, model.config.model_type = "sdpa", "gpt2"
    assert not bf16_target_pays(model, cpu, f32)                              # a family not checked
    monkeypatch.setattr(target_precision, "MIN_MODEL_WEIGHTS", 10_000_000)
    assert not bf16_target_pays(tiny_target(), cpu, f32)                      # per-call overhead, not memory
    monkeypatch.setattr(target_precision, "cpu_computes_bf16", lambda: False)
    monkeypatch.setattr(target_precision, "MIN_MODEL_WEIGHTS", 10_000)
    assert not bf16_target_pays(tiny_target(), cpu, f32)                      # emulated bf16 is slower


def test_the_off_switch_is_read_from_the_environment():
    from specviz.engine.settings import Deployment

    assert Deployment.from_environ({}).target_bf16
    assert not Deployment.from_environ({"SPECVIZ_TARGET_BF16": "0"}).target_bf16
    with pytest.raises(ValueError, match="SPECVIZ_TARGET_BF16 must be 1 or 0"):
        Deployment.from_environ({"SPECVIZ_TARGET_BF16": "half"})
