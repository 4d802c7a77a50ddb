"""engine/models/draft_precision.py: a large draft computes in bfloat16 on a bf16 CPU, the target stays float32, and
the output is still exactly the target's (what q the trace shows, greedy parity, chi-square), on a tiny
seeded llama pair whose draft shares the target's embeddings and reads its features, as smollm2-local's."""
from __future__ import annotations

import pytest
import torch

from specviz.core.config import DecodeConfig
from specviz.engine.decoding.decoders import TargetOnlyDecoder
from specviz.engine.decoding.factory import make_decoder
from specviz.engine.models import draft_precision
from specviz.engine.models.draft_precision import SharedEmbedding, SharedHead, draft_dtype
from tests.engine.feature_pair import save_feature_pair
from tests.engine.first_token import bulk_first_token_pvalue, first_token_pvalue


@pytest.fixture(scope="module")
def bf16_pair(tmp_path_factory):
    """The tiny pair loaded as the app loads it, on a CPU said to compute bf16, with the size bar lowered."""
    from specviz.engine.models.loading import load_pair

    draft, target = save_feature_pair(tmp_path_factory.mktemp("bf16-pair"))
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(draft_precision, "MIN_WEIGHTS", 1_000)
        mp.setattr(draft_precision, "cpu_computes_bf16", lambda: True)
        mp.delenv("SPECVIZ_DRAFT_BF16", raising=False)
        return load_pair(draft=draft, target=target, device="cpu")


@pytest.fixture(scope="module")
def bf16_token_pair(tmp_path_factory):
    """As bf16_pair, with a draft that shares the target's embeddings and head but reads tokens only."""
    from specviz.engine.models.loading import load_pair

    draft, target = save_feature_pair(tmp_path_factory.mktemp("bf16-token-pair"), features=False)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(draft_precision, "MIN_WEIGHTS", 1_000)
        mp.setattr(draft_precision, "cpu_computes_bf16", lambda: True)
        mp.delenv("SPECVIZ_DRAFT_BF16", raising=False)
        return load_pair(draft=draft, target=target, device="cpu")


def test_the_draft_computes_in_bfloat16_and_the_target_stays_float32(bf16_pair):
    draft, target = bf16_pair.draft, bf16_pair.target
    assert bf16_pair.dtype == torch.float32 and bf16_pair.draft_dtype == torch.bfloat16
    assert all(p.dtype == torch.float32 for p in target.parameters())
    # shared, still the target's float32 table, handing on its rows in bfloat16
    assert isinstance(draft.get_input_embeddings(), SharedEmbedding)
    assert draft.get_input_embeddings().weight is target.get_input_embeddings().weight
    assert draft.model.layers[0].mlp.up_proj.weight.dtype == torch.bfloat16
    assert draft.feature_fc.weight.dtype == torch.bfloat16
    # the head it shares stays the target's float32 one and reads the draft's hidden states cast up
    assert isinstance(draft.lm_head, SharedHead) and draft.lm_head.weight is target.get_output_embeddings().weight


def test_the_choice_needs_a_cpu_float32_pair_a_bf16_cpu_and_a_large_draft(monkeypatch):
    big, small = torch.nn.Linear(100, 100), torch.nn.Linear(10, 10)
    target = torch.nn.Linear(1, 1)
    monkeypatch.setattr(draft_precision, "MIN_WEIGHTS", 5_000)
    monkeypatch.setattr(draft_precision, "cpu_computes_bf16", lambda: True)
    cpu, f32 = torch.device("cpu"), torch.float32
    assert draft_dtype(big, target, cpu, f32) == torch.bfloat16
    assert draft_dtype(small, target, cpu, f32) == f32                        # bound by overhead, not memory
    assert draft_dtype(big, target, torch.device("cuda"), f32) == f32         # GPUs pick the pair's dtype
    assert draft_dtype(big, target, cpu, torch.float16) == torch.float16      # the pair is already 16-bit
    assert draft_dtype(big, target, cpu, f32, enabled=False) == f32           # SPECVIZ_DRAFT_BF16=0
    assert draft_dtype(big, big, cpu, f32) == f32                             # nothing of its own
    monkeypatch.setattr(draft_precision, "cpu_computes_bf16", lambda: False)
    assert draft_dtype(big, target, cpu, f32) == f32                          # emulated bf16 is slow


def test_the_off_switch_is_read_from_the_environment():
    from specviz.engine.settings import Deployment

    assert Deployment.from_environ({}).draft_bf16
    assert not Deployment.from_environ({"SPECVIZ_DRAFT_BF16": "0"}).draft_bf16
    with pytest.raises(ValueError, match="SPECVIZ_DRAFT_BF16 must be 1 or 0"):
        Deployment.from_environ({"SPECVIZ_DRAFT_BF16": "half"})


def reference_draft_probs(pair, tokens: list[int], drafted: list[int], config: DecodeConfig) -> list[torch.Tensor]:
    """The draft's distributions for a round from scratch, every input cast to the draft's bfloat16: the
    target's float32 features over the whole prefix, then the draft over [embed(t_j); f_{j-1}] with its
    own last hidden state standing in for the feature of each drafted position."""
    draft, target, bf16 = pair.draft, pair.target, torch.bfloat16
    embed = target.get_input_embeddings().weight                                                 # float32
    with torch.no_grad():
        feats = target(torch.tensor([tokens]), output_hidden_states=True).hidden_states[-1][0]    # [n, H]
        before = torch.cat([torch.zeros(1, feats.shape[1]), feats[:-1]])
        inputs = draft.feature_fc(torch.cat([embed[tokens], before], -1).to(bf16))
        run = draft(inputs_embeds=inputs[None], output_hidden_states=True)
        out = [config.warp(run.logits[0, -1, : pair.vocab_size].float())]
        for token in drafted:
            guess = run.hidden_states[-1][0, -1]
            step = draft.feature_fc(torch.cat([embed[token].to(bf16), guess]))
            inputs = torch.cat([inputs, step[None]])
            run = draft(inputs_embeds=inputs[None], output_hidden_states=True)
            out.append(config.warp(run.logits[0, -1, : pair.vocab_size].float()))
    return out[: len(drafted)]


def test_each_q_shown_is_the_bfloat16_drafts_own(bf16_pair):
    config = DecodeConfig(gamma=3, max_new_tokens=40, seed=1)
    dec = make_decoder(bf16_pair, "ROMEO.\nBut soft", config)
    checked = 0
    for _ in range(4):
        before = list(dec.tokens)
        trace = dec.step()
        expected = reference_draft_probs(bf16_pair, before, [p.draft_token for p in trace.positions], config)
        for pos, ref in zip(trace.positions, expected):
            for cand in pos.candidates:
                # a cached forward and a from-scratch one round differently in bf16 (2^-8 of a logit)
                assert cand.draft_prob == pytest.approx(ref[cand.id].item(), rel=0.05, abs=1e-4)
                checked += 1
    assert checked >= 4 * 3 * 4


@pytest.mark.parametrize("drafts", [1, 3])
def test_greedy_speculative_equals_target_only(bf16_pair, drafts):
    config = DecodeConfig(gamma=3, drafts=drafts, temperature=0, max_new_tokens=30)
    spec = make_decoder(bf16_pair, "HAMLET.\nTo be", config)
    base = TargetOnlyDecoder(bf16_pair, "HAMLET.\nTo be", config)
    spec.run()
    base.run()
    assert spec.generated_ids == base.generated_ids and len(base.generated_ids) == 30


def test_first_emitted_token_follows_the_float32_target(bf16_pair):
    """RUNS = 400 seeded one-round runs (gamma = 2, T = 1) with the bfloat16 draft, and 10,000 rounds of the decision
    code on the rows at "KING" (q in bfloat16 as the round receives it); chi-square p > 1e-3 against the float32
    target's next-token distribution from a plain forward (power: tests/engine/first_token.py)."""
    config = DecodeConfig(gamma=2, max_new_tokens=1, record=False)
    assert first_token_pvalue(bf16_pair, "KING", config) > 1e-3
    assert bulk_first_token_pvalue(bf16_pair, "KING", config) > 1e-3


def test_every_caller_that_feeds_a_bf16_draft_token_ids_works(bf16_token_pair):
    """The decoders, the debugging view's sweep and KL note, and transformers' assisted generation (bench's
    contender) all feed the draft token ids; its shared float32 embeddings hand them on in bfloat16."""
    from specviz.engine.decoding.sweep import next_acceptance, temperature_sweep
    from specviz.tools.bench import hf_assisted

    pair = bf16_token_pair
    assert pair.draft_dtype == torch.bfloat16 and pair.draft.model.layers[0].mlp.up_proj.weight.dtype == torch.bfloat16
    dec = make_decoder(pair, "KING.\nNow is", DecodeConfig(gamma=3, max_new_tokens=12, seed=4))
    dec.run()
    assert len(dec.generated_ids) == 12
    tokens = dec.tokens
    sweep = temperature_sweep(pair, tokens, temperatures=(0.7, 1.0), positions=8)
    exact, mentored = next_acceptance(pair, tokens, DecodeConfig(temperature=1.0), 0.1)
    assert all(0 < a <= 1 for a in sweep["acceptance_rate"]) and 0 < exact <= mentored <= 1
    assert hf_assisted(pair, pair.encode("KING."), gamma=3, new_tokens=6, seed=0) == 6
