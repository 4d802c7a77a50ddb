"""The bundled pair and the loader: offline from_pretrained, one vocabulary, clear errors."""
from __future__ import annotations

import subprocess
import sys

import pytest
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

from specviz.engine.models.loading import check_compatible, load_pair
from specviz.engine.models.presets import ASSETS, ModelLoadError


@pytest.mark.parametrize("name", ["shakespeare-target", "shakespeare-draft"])
def test_bundled_models_load_offline_with_from_pretrained_and_generate(name):
    tok = AutoTokenizer.from_pretrained(ASSETS / name)
    model = AutoModelForCausalLM.from_pretrained(ASSETS / name, dtype=torch.float32)
    ids = tok("ROMEO.\n", return_tensors="pt").input_ids
    out = model.generate(ids, attention_mask=torch.ones_like(ids), do_sample=False, max_new_tokens=12,
                         pad_token_id=tok.eos_token_id)
    assert out.shape[1] > ids.shape[1]
    assert tok.decode(out[0, ids.shape[1]:]).strip()


def test_bundled_pair_shares_one_vocabulary(pair):
    draft_tok = AutoTokenizer.from_pretrained(ASSETS / "shakespeare-draft")
    target_tok = AutoTokenizer.from_pretrained(ASSETS / "shakespeare-target")
    assert draft_tok.get_vocab() == target_tok.get_vocab()
    assert pair.vocab_size == len(target_tok) == pair.draft.config.vocab_size == pair.target.config.vocab_size


def test_pairs_are_cached_and_shared(pair):
    assert load_pair("shakespeare", device="cpu") is pair


class FakeTokenizer:
    def __init__(self, vocab):
        self.vocab = vocab

    def get_vocab(self):
        return self.vocab


def test_incompatible_tokenizers_name_the_first_differing_id():
    with pytest.raises(ModelLoadError, match="id 1 is 'b' for the draft but 'x' for the target"):
        check_compatible(FakeTokenizer({"a": 0, "b": 1}), FakeTokenizer({"a": 0, "x": 1}))


def test_unknown_preset_and_unreachable_hub_id_give_clear_errors():
    with pytest.raises(ModelLoadError, match="unknown preset"):
        load_pair("no-such-preset")
    with pytest.raises(ModelLoadError, match="could not read the draft model's config 'no-such-org/no-such-model'"):
        load_pair(draft="no-such-org/no-such-model", target="gpt2")


@pytest.mark.slow  # a fresh interpreter trains a pair
def test_training_script_produces_loadable_folders(tmp_path):
    """A seconds-long run on a corpus of the test's own writes folders from_pretrained loads (the repository
    carries no corpus: `python -m specviz corpus` fetches the bundled pair's)."""
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for i, name in enumerate(("a_play", "julius_caesar", "twelfth_night")):
        (corpus / f"{name}.txt").write_text(f"ACT {i}. SCENE I.\nFirst Citizen. Before we proceed any further, hear me "
                                            f"speak.\nAll. Speak, speak.\n" * 20)
    out = subprocess.run([sys.executable, "-m", "specviz", "train", "--corpus", str(corpus), "--limit-chars", "2000",
                          "--minutes", "0.02",
                          "--target-arch", "1", "32", "2", "--draft-arch", "1", "16", "2", "--vocab-size", "300",
                          "--out", str(tmp_path / "models"), "--checkpoints", str(tmp_path / "ck")],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    pair = load_pair(draft=str(tmp_path / "models" / "shakespeare-draft"),
                     target=str(tmp_path / "models" / "shakespeare-target"), device="cpu")
    assert pair.vocab_size == 300
    assert (tmp_path / "models" / "shakespeare-target" / "training.json").exists()


def test_chat_pairs_wrap_the_prompt_in_the_chat_template(pair):
    import copy
    import dataclasses

    tok = copy.deepcopy(pair.tokenizer)
    tok.chat_template = ("{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}\n{% endfor %}"
                         "{% if add_generation_prompt %}assistant:{% endif %}")
    chat = dataclasses.replace(pair, tokenizer=tok, chat=True, _texts={})
    assert tok.decode(chat.encode("hi there")) == "user: hi there\nassistant:"
    assert pair.encode("hi there") == tok("hi there", add_special_tokens=False)["input_ids"]
