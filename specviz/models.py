"""Draft/target model pairs: presets, loading with `from_pretrained`, device and compatibility.

The bundled Shakespeare pair in assets/models/ loads with the very same calls as a hub pair;
a Space picks its preset with the SPECVIZ_PRESET environment variable.
"""
from __future__ import annotations

import os
import threading
from dataclasses import dataclass, field
from pathlib import Path

import torch

ASSETS = Path(__file__).resolve().parents[1] / "assets" / "models"


class ModelLoadError(ValueError):
    """A model could not be loaded or the pair cannot be used together."""


@dataclass(frozen=True)
class Preset:
    draft: str
    target: str
    chat: bool = False
    examples: tuple[str, ...] = ()
    description: str = ""


PRESETS: dict[str, Preset] = {
    "shakespeare": Preset(
        draft=str(ASSETS / "shakespeare-draft"), target=str(ASSETS / "shakespeare-target"),
        examples=("ROMEO.\nBut soft, what light", "KING.\nNow is the time", "HAMLET.\nTo be, or not",
                  "Shall I compare thee to a summer's day?\n"),
        description="bundled, offline: 2-layer draft distilled from a 16-layer target, trained on Shakespeare"),
    "smollm2": Preset("HuggingFaceTB/SmolLM2-135M", "HuggingFaceTB/SmolLM2-1.7B",
                      examples=("The theory of relativity states that",), description="hub, GPU recommended"),
    "qwen2.5": Preset("Qwen/Qwen2.5-0.5B-Instruct", "Qwen/Qwen2.5-3B-Instruct", chat=True,
                      examples=("Explain speculative decoding in two sentences.",), description="hub, chat, GPU recommended"),
    "gpt2": Preset("gpt2", "gpt2-xl", examples=("In a shocking finding, scientists discovered",), description="hub"),
    "pythia": Preset("EleutherAI/pythia-70m", "EleutherAI/pythia-1.4b",
                     examples=("The capital of France is",), description="hub"),
}


def default_preset() -> str:
    name = os.environ.get("SPECVIZ_PRESET", "shakespeare")
    if name not in PRESETS:
        raise ModelLoadError(f"SPECVIZ_PRESET={name!r} is not a preset; choose one of {sorted(PRESETS)}")
    return name


def pick_device(device: str | None = None) -> torch.device:
    if device:
        return torch.device(device)
    if torch.cuda.is_available():
        return torch.device("cuda")
    if getattr(torch.backends, "mps", None) and torch.backends.mps.is_available():
        return torch.device("mps")
    return torch.device("cpu")


def pick_dtype(device: torch.device, dtype: str | torch.dtype | None = None) -> torch.dtype:
    if isinstance(dtype, torch.dtype):
        return dtype
    if dtype:
        return getattr(torch, dtype)
    if device.type == "cuda":
        return torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
    return torch.float16 if device.type == "mps" else torch.float32


@dataclass
class ModelPair:
    draft: torch.nn.Module
    target: torch.nn.Module
    tokenizer: object
    vocab_size: int            # ids both models share; padded embedding rows beyond it are masked
    device: torch.device
    dtype: torch.dtype
    name: str
    chat: bool = False
    examples: tuple[str, ...] = ()
    context_window: int = field(default=0)

    def encode(self, prompt: str) -> list[int]:
        if self.chat and getattr(self.tokenizer, "chat_template", None):
            ids = self.tokenizer.apply_chat_template([{"role": "user", "content": prompt}],
                                                     add_generation_prompt=True, tokenize=True)
            return list(ids["input_ids"] if isinstance(ids, dict) or hasattr(ids, "keys") else ids)
        return self.tokenizer(prompt, add_special_tokens=False)["input_ids"]

    _texts: dict = field(default_factory=dict, repr=False)

    def token_text(self, token_id: int) -> str:
        """One token as text (memoised: traces ask for the same few tokens again and again)."""
        text = self._texts.get(token_id)
        if text is None:
            text = self._texts[token_id] = self.tokenizer.decode([int(token_id)], clean_up_tokenization_spaces=False)
        return text


def check_compatible(draft_tokenizer, target_tokenizer) -> int:
    """Both tokenizers must map every id to the same token; returns the shared vocabulary size."""
    draft_vocab, target_vocab = draft_tokenizer.get_vocab(), target_tokenizer.get_vocab()
    draft_by_id = {i: t for t, i in draft_vocab.items()}
    target_by_id = {i: t for t, i in target_vocab.items()}
    for i in range(max(len(draft_by_id), len(target_by_id))):
        if draft_by_id.get(i) != target_by_id.get(i):
            raise ModelLoadError(f"incompatible tokenizers: id {i} is {draft_by_id.get(i)!r} for the draft "
                                 f"but {target_by_id.get(i)!r} for the target; speculative decoding needs one vocabulary")
    return len(draft_by_id)


_CACHE: dict[tuple, ModelPair] = {}
_LOCK = threading.Lock()


def load_pair(preset: str | None = None, *, draft: str | None = None, target: str | None = None,
              device: str | None = None, dtype: str | torch.dtype | None = None) -> ModelPair:
    """Load (once per process; all sessions share the read-only copy) a draft/target pair."""
    if draft or target:
        if not (draft and target):
            raise ModelLoadError("give both --draft and --target, or a --preset")
        spec, name = Preset(draft=draft, target=target), f"{draft} -> {target}"
    else:
        name = preset or default_preset()
        if name not in PRESETS:
            raise ModelLoadError(f"unknown preset {name!r}; choose one of {sorted(PRESETS)}")
        spec = PRESETS[name]
    dev = pick_device(device)
    dt = pick_dtype(dev, dtype)
    key = (spec.draft, spec.target, str(dev), str(dt))
    with _LOCK:
        if key not in _CACHE:
            _CACHE[key] = _load(spec, name, dev, dt)
        return _CACHE[key]


def _load_one(model_id: str, role: str, device: torch.device, dtype: torch.dtype):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    try:
        tokenizer = AutoTokenizer.from_pretrained(model_id)
        model = AutoModelForCausalLM.from_pretrained(model_id, dtype=dtype)
    except (OSError, ValueError) as err:
        where = "local folder" if Path(model_id).exists() else "hub id (is the hub reachable? HF_HUB_OFFLINE is " \
            f"{os.environ.get('HF_HUB_OFFLINE', 'unset')})"
        raise ModelLoadError(f"could not load the {role} model {model_id!r} as a {where}: "
                             f"{str(err).splitlines()[0] if str(err) else type(err).__name__}") from err
    except torch.cuda.OutOfMemoryError as err:
        raise ModelLoadError(f"out of memory loading the {role} model {model_id!r} on {device}") from err
    return tokenizer, model.to(device).eval()


def _load(spec: Preset, name: str, device: torch.device, dtype: torch.dtype) -> ModelPair:
    draft_tok, draft = _load_one(spec.draft, "draft", device, dtype)
    target_tok, target = _load_one(spec.target, "target", device, dtype)
    vocab = check_compatible(draft_tok, target_tok)
    for role, model in (("draft", draft), ("target", target)):
        if model.config.get_text_config().vocab_size < vocab:
            raise ModelLoadError(f"the {role} model has {model.config.vocab_size} output rows but the tokenizer {vocab} ids")
    window = min(_context_window(draft), _context_window(target))
    with torch.inference_mode():  # pay one-off allocation costs now, not in the first timed step
        for model in (draft, target):
            model(torch.zeros((1, 4), dtype=torch.long, device=device), use_cache=True)
    return ModelPair(draft=draft, target=target, tokenizer=target_tok, vocab_size=vocab, device=device, dtype=dtype,
                     name=name, chat=spec.chat, examples=spec.examples, context_window=window)


def _context_window(model) -> int:
    config = model.config.get_text_config()
    for attr in ("max_position_embeddings", "n_positions", "max_sequence_length"):
        if getattr(config, attr, None):
            return int(getattr(config, attr))
    return 2048
