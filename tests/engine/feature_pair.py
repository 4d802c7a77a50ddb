"""A tiny seeded llama pair whose draft shares the target's embeddings and head and reads its hidden states
(the shape of smollm2-local's, small enough for a test), saved as the app loads pairs."""
from __future__ import annotations

import json

import torch

from specviz.core.config import DecodeConfig
from specviz.engine.models.presets import ASSETS

SHAPE = dict(model_type="llama", hidden_size=32, intermediate_size=64, num_attention_heads=4, num_key_value_heads=2,
             max_position_embeddings=256, vocab_size=4096, bos_token_id=0, eos_token_id=0, tie_word_embeddings=True)


def save_feature_pair(root, features: bool = True) -> tuple[str, str]:
    """A 2-layer target and a 1-layer draft reading its features under `root` (with features=False, a draft that
    shares the target's embeddings and head but reads only tokens); their folders (draft, target)."""
    from safetensors.torch import save_file
    from transformers import AutoConfig, AutoTokenizer, LlamaForCausalLM

    tokenizer = AutoTokenizer.from_pretrained(str(ASSETS / "shakespeare-target"))
    torch.manual_seed(0)
    target = LlamaForCausalLM(AutoConfig.for_model(**SHAPE, num_hidden_layers=2))
    draft = LlamaForCausalLM(AutoConfig.for_model(**{**SHAPE, "tie_word_embeddings": False}, num_hidden_layers=1))
    for model, name in ((target, "target"), (draft, "draft")):
        model.save_pretrained(str(root / name))
        tokenizer.save_pretrained(str(root / name))
    fc = torch.nn.Linear(64, 32)
    save_file({k: v.contiguous() for k, v in fc.state_dict().items()}, str(root / "draft" / "feature_fc.safetensors"))
    shared = {"embeddings": "shared with the target", **({"feature_fc": "feature_fc.safetensors"} if features else {})}
    (root / "draft" / "specviz_shared.json").write_text(json.dumps(shared))
    return str(root / "draft"), str(root / "target")


def reference_draft_probs(pair, tokens: list[int], drafted: list[int], config: DecodeConfig) -> list[torch.Tensor]:
    """The draft's distributions for a round, computed from scratch: the target's hidden states over the
    whole prefix (one plain forward), then the draft over [embed(t_j); f_{j-1}] with its own last hidden
    state standing in for the feature of each drafted position."""
    draft, target = pair.draft, pair.target
    with torch.no_grad():
        feats = target(torch.tensor([tokens]), output_hidden_states=True).hidden_states[-1][0]  # [n, H]
        before = torch.cat([torch.zeros(1, feats.shape[1]), feats[:-1]])                        # f_{j-1}
        inputs = draft.feature_fc(torch.cat([draft.get_input_embeddings()(torch.tensor(tokens)), before], -1))
        run = draft(inputs_embeds=inputs[None], output_hidden_states=True)
        out = [config.warp(run.logits[0, -1, : pair.vocab_size])]
        for token in drafted:
            guess = run.hidden_states[-1][0, -1]
            step = draft.feature_fc(torch.cat([draft.get_input_embeddings()(torch.tensor(token)), guess]))
            inputs = torch.cat([inputs, step[None]])
            run = draft(inputs_embeds=inputs[None], output_hidden_states=True)
            out.append(config.warp(run.logits[0, -1, : pair.vocab_size]))
    return out[: len(drafted)]
