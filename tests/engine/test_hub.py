"""The hub path, offline: a fabricated hub-layout cache in a temporary HF_HOME, loaded by repo id."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

from specviz.engine.models.presets import ASSETS

pytestmark = pytest.mark.slow  # fresh interpreters on a fabricated hub cache

COMMIT = "0123456789abcdef0123456789abcdef01234567"
CHAT = ("{% for m in messages %}<{{ m['role'] }}>{{ m['content'] }}\n{% endfor %}"
        "{% if add_generation_prompt %}<assistant>{% endif %}")


def cache_repo(home, repo_id: str, source_folder) -> str:
    """Lay source_folder out as the hub cache does: models--org--name/{refs/main, snapshots/COMMIT/...}."""
    root = home / "hub" / ("models--" + repo_id.replace("/", "--"))
    snapshot = root / "snapshots" / COMMIT
    shutil.copytree(source_folder, snapshot)
    (root / "refs").mkdir(parents=True)
    (root / "refs" / "main").write_text(COMMIT)
    (root / "blobs").mkdir()
    return str(snapshot)


def tiny_chat_pair(tmp_path):
    """A tiny random Llama target and draft sharing the bundled tokenizer, which gets a chat template."""
    import torch
    from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM

    tok = AutoTokenizer.from_pretrained(ASSETS / "shakespeare-target")
    tok.chat_template = CHAT
    folders = []
    for name, layers in (("tiny-draft", 1), ("tiny-target", 2)):
        torch.manual_seed(layers)
        model = LlamaForCausalLM(LlamaConfig(vocab_size=len(tok), hidden_size=32, intermediate_size=64,
                                             num_hidden_layers=layers, num_attention_heads=2, num_key_value_heads=2,
                                             max_position_embeddings=256, eos_token_id=tok.eos_token_id))
        folder = tmp_path / name
        model.save_pretrained(folder)
        tok.save_pretrained(folder)
        folders.append(folder)
    return folders


def swapped_tokenizer_copy(tmp_path):
    """The bundled draft with two token ids swapped in its tokenizer: an incompatible vocabulary."""
    folder = tmp_path / "swapped"
    shutil.copytree(ASSETS / "shakespeare-draft", folder)
    data = json.loads((folder / "tokenizer.json").read_text())
    vocab = data["model"]["vocab"]
    (a, ia), (b, ib) = [(k, v) for k, v in vocab.items() if v in (300, 301)]
    vocab[a], vocab[b] = ib, ia
    (folder / "tokenizer.json").write_text(json.dumps(data))
    return folder


@pytest.fixture(scope="module")
def hub_home(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("hf")
    home = tmp / "home"
    cache_repo(home, "specviz/shakespeare-draft", ASSETS / "shakespeare-draft")
    cache_repo(home, "specviz/shakespeare-target", ASSETS / "shakespeare-target")
    draft, target = tiny_chat_pair(tmp)
    cache_repo(home, "tiny/draft", draft)
    cache_repo(home, "tiny/target", target)
    cache_repo(home, "specviz/swapped-draft", swapped_tokenizer_copy(tmp))
    return home


def generate(home, *args):
    env = {**os.environ, "HF_HOME": str(home), "HF_HUB_OFFLINE": "1"}
    env.pop("HF_HUB_CACHE", None)
    return subprocess.run([sys.executable, "-m", "specviz", "generate", "--prompt", "KING.", "--max-new-tokens", "12",
                           "--json", *args], capture_output=True, text=True, timeout=300, env=env)


def test_repo_ids_load_from_the_cache_and_step(hub_home):
    out = generate(hub_home, "--draft", "specviz/shakespeare-draft", "--target", "specviz/shakespeare-target")
    assert out.returncode == 0, out.stderr[-1500:]
    data = json.loads(out.stdout)
    assert len(data["token_ids"]) == 12 and data["stats"]["target_calls"] == len(data["steps"]) >= 3


def test_a_target_with_a_chat_template_wraps_custom_pair_prompts(hub_home):
    out = generate(hub_home, "--draft", "tiny/draft", "--target", "tiny/target", "--seed", "2")
    assert out.returncode == 0, out.stderr[-1500:]
    code = ("import sys; from specviz.engine.models.loading import load_pair; "
            "p = load_pair(draft='tiny/draft', target='tiny/target'); "
            "print(p.tokenizer.decode(p.encode('KING.')))")
    env = {**os.environ, "HF_HOME": str(hub_home), "HF_HUB_OFFLINE": "1"}
    shown = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, env=env)
    assert shown.stdout.strip().startswith("<user>KING.") and shown.stdout.strip().endswith("<assistant>")


def test_a_mismatched_vocabulary_is_a_clear_error(hub_home):
    out = generate(hub_home, "--draft", "specviz/swapped-draft", "--target", "specviz/shakespeare-target")
    assert out.returncode == 2 and "incompatible tokenizers: id 300" in out.stderr and "Traceback" not in out.stderr
