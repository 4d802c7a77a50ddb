"""A draft that reads the target's hidden states (engine/decoding/feature_draft.py), on tiny seeded llama models:
what it is fed, that its cache never keeps a position computed from its own guess, and that the output
is still exactly the target's (greedy parity, chi-square)."""
from __future__ import annotations

import json

import pytest
import torch

from specviz.core.config import DecodeConfig
from specviz.engine.decoding.decoders import TargetOnlyDecoder
from specviz.engine.decoding.factory import make_decoder
from specviz.engine.decoding.feature_draft import FeatureDraft
from tests.engine.feature_pair import reference_draft_probs, save_feature_pair
from tests.engine.first_token import bulk_first_token_pvalue, first_token_pvalue


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """A 2-layer llama target and a 1-layer draft reading its features, saved and loaded as the app loads pairs."""
    from specviz.engine.models.loading import load_pair

    draft, target = save_feature_pair(tmp_path_factory.mktemp("feature-pair"))
    return load_pair(draft=draft, target=target, device="cpu")


def test_the_pair_loads_with_its_feature_layer_and_the_decoder_uses_it(tiny):
    dec = make_decoder(tiny, "ROMEO.", DecodeConfig(gamma=3, max_new_tokens=12))
    assert isinstance(dec.drafter.model, FeatureDraft) and dec.target.keep_features
    assert tiny.draft.get_input_embeddings() is tiny.target.get_input_embeddings()
    assert not TargetOnlyDecoder(tiny, "ROMEO.", DecodeConfig(max_new_tokens=2)).target.keep_features


@pytest.mark.parametrize("static", [False, True], ids=["dynamic-cache", "static-cache"])
def test_the_draft_reads_the_targets_features_then_its_own_guesses(tiny, static):
    config = DecodeConfig(gamma=3, max_new_tokens=40, seed=1)
    dec = make_decoder(tiny, "ROMEO.\nBut soft", config, static_cache=static)
    assert (dec.drafter.model.static is not None) == static
    checked = 0
    for _ in range(5):
        before = list(dec.tokens)
        trace = dec.step()
        drafted = [p.draft_token for p in trace.positions]
        expected = reference_draft_probs(tiny, before, drafted, config)
        for pos, ref in zip(trace.positions, expected):
            for cand in pos.candidates:
                assert cand.draft_prob == pytest.approx(ref[cand.id].item(), abs=1e-5)
                checked += 1
        if dec.finished:
            break
    assert checked >= 5 * 3 * 4


@pytest.mark.parametrize("static", [False, True], ids=["dynamic-cache", "static-cache"])
def test_the_cache_keeps_no_position_computed_from_a_guess(tiny, static):
    dec = make_decoder(tiny, "KING.\nNow is", DecodeConfig(gamma=4, max_new_tokens=40, seed=2), static_cache=static)
    accepted = 0
    for _ in range(6):
        trace = dec.step()
        accepted += trace.n_accepted
        assert dec.drafter.model.true_seen == dec.drafter.model.seen <= dec.target.seen
        assert dec.target.features.shape[1] == dec.target.seen
    assert accepted > 0  # some rounds accepted drafts, which the next round recomputed from the target


@pytest.mark.parametrize("drafts,static", [(1, False), (3, False), (1, True)])
def test_greedy_speculative_equals_target_only(tiny, drafts, static):
    config = DecodeConfig(gamma=3, drafts=drafts, temperature=0, max_new_tokens=30)
    spec = make_decoder(tiny, "HAMLET.\nTo be", config, static_cache=static)
    base = TargetOnlyDecoder(tiny, "HAMLET.\nTo be", config, static_cache=static)
    spec.run()
    base.run()
    assert spec.generated_ids == base.generated_ids and len(base.generated_ids) == 30


def test_first_emitted_token_follows_the_target(tiny):
    """RUNS = 400 seeded one-round runs (gamma = 2, T = 1), and 10,000 rounds of the decision code on the rows at "KING"
    (q read off the target's features); chi-square p > 1e-3 against the target's next-token distribution from a plain
    forward (power: tests/engine/first_token.py)."""
    config = DecodeConfig(gamma=2, max_new_tokens=1, record=False)
    assert first_token_pvalue(tiny, "KING", config) > 1e-3
    assert bulk_first_token_pvalue(tiny, "KING", config) > 1e-3


def test_the_sweep_and_the_kl_note_feed_the_draft_the_targets_features(tiny):
    """The debugging view's acceptance figures for such a draft are those of the first drafted position:
    its q reads the target's feature, not the token alone."""
    from specviz.engine.decoding.sweep import next_acceptance, temperature_sweep

    config = DecodeConfig(temperature=1.0)
    tokens = tiny.encode("ROMEO.\nBut soft")
    q = reference_draft_probs(tiny, tokens, [0], config)[0]
    with torch.no_grad():
        p = config.warp(tiny.target(torch.tensor([tokens])).logits[0, -1, : tiny.vocab_size])
    expected = torch.minimum(p, q).sum().item()
    assert next_acceptance(tiny, tokens, config, 0.0)[0] == pytest.approx(expected, abs=1e-5)
    sweep = temperature_sweep(tiny, tokens, temperatures=(1.0,), positions=1)
    assert sweep["acceptance_rate"][0] == pytest.approx(expected, abs=1e-5)


def test_a_forked_decoder_continues_as_a_fresh_one_with_that_seed(tiny):
    config = DecodeConfig(gamma=3, max_new_tokens=20, seed=5)
    base = make_decoder(tiny, "ROMEO.\nBut soft", config)
    base.step()
    twin = base.fork(seed=11)
    twin.run()
    fresh = make_decoder(tiny, "ROMEO.\nBut soft", config)
    fresh.step()
    fresh.generator.manual_seed(11)
    fresh.run()
    assert twin.generated_ids == fresh.generated_ids and base.steps == 1


@pytest.mark.parametrize("named", ["../target/model.safetensors", "/etc/hostname", "sub/feature_fc.safetensors", "missing.safetensors"])
def test_a_shared_file_must_be_a_plain_file_of_the_drafts_own_folder(tiny, tmp_path, named):
    """A folder a visitor names may not make the server read a file elsewhere through specviz_shared.json."""
    import shutil

    from specviz.engine.models.loading import load_pair
    from specviz.engine.models.presets import ModelLoadError

    source = tiny.ref.draft
    draft = tmp_path / "draft"
    shutil.copytree(source, draft)
    (draft / "sub").mkdir()
    shutil.copy(draft / "feature_fc.safetensors", draft / "sub" / "feature_fc.safetensors")
    (draft / "specviz_shared.json").write_text(json.dumps({"embeddings": "shared with the target", "feature_fc": named}))
    with pytest.raises(ModelLoadError, match="not a file in the draft's own folder"):
        load_pair(draft=str(draft), target=tiny.ref.target, device="cpu")


def test_a_feature_layer_of_the_wrong_shape_is_refused_at_load(tiny, tmp_path):
    import shutil

    from safetensors.torch import save_file

    from specviz.engine.models.loading import load_pair
    from specviz.engine.models.presets import ModelLoadError

    draft = tmp_path / "draft"
    shutil.copytree(tiny.ref.draft, draft)
    save_file({k: v.contiguous() for k, v in torch.nn.Linear(48, 32).state_dict().items()}, str(draft / "feature_fc.safetensors"))
    with pytest.raises(ModelLoadError, match="feature_fc maps 48 to 32 numbers; this draft and target need 64 to 32"):
        load_pair(draft=str(draft), target=tiny.ref.target, device="cpu")
