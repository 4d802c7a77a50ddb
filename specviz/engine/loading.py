"""Loading a draft/target pair with `from_pretrained`: device, dtype, compatibility, the pair cache.

Pairs are named by `engine.presets`; this module owns the loaded weights (one cache per process).
"""
from __future__ import annotations

import gc
import os
import threading
from dataclasses import dataclass, field
from pathlib import Path

import torch

from . import settings
from .presets import ModelLoadError, Preset, pair_ref


def pick_device(device: str | None = None) -> torch.device:
    if device:
        try:
            dev = torch.device(device)
        except RuntimeError as err:
            raise ModelLoadError(f"unknown device {device!r}: use cuda, mps or cpu") from err
        if dev.type == "cuda" and not torch.cuda.is_available():
            raise ModelLoadError(f"device {device!r} asked for, but this machine has no CUDA GPU (try cpu)")
        if dev.type == "mps" and not (getattr(torch.backends, "mps", None) and torch.backends.mps.is_available()):
            raise ModelLoadError(f"device {device!r} asked for, but MPS is not available here (try cpu)")
        if dev.type not in ("cuda", "mps", "cpu"):
            raise ModelLoadError(f"unsupported device {device!r}: use cuda, mps or cpu")
        return dev
    if torch.cuda.is_available():
        return torch.device("cuda")
    if getattr(torch.backends, "mps", None) and torch.backends.mps.is_available():
        return torch.device("mps")
    return torch.device("cpu")


def pick_dtype(device: torch.device, dtype: str | torch.dtype | None = None) -> torch.dtype:
    if isinstance(dtype, torch.dtype):
        return dtype
    if dtype:
        if not isinstance(getattr(torch, str(dtype), None), torch.dtype):
            raise ModelLoadError(f"unknown dtype {dtype!r}: use float32, float16 or bfloat16")
        return getattr(torch, dtype)
    if device.type == "cuda":  # emulated bf16 (a T4, compute capability 7.5) is slow: fp16 there
        return torch.bfloat16 if torch.cuda.is_bf16_supported(including_emulation=False) else torch.float16
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
    chat: bool | None = False
    examples: tuple[str, ...] = ()
    context_window: int = field(default=0)
    ref: Preset | None = None  # what load_pair was asked for: load_pair(pair.ref, device=pair.device) is this pair

    def encode(self, prompt: str) -> list[int]:
        if self.chat is not False and getattr(self.tokenizer, "chat_template", None):
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
_LOCKS: dict[tuple, threading.Lock] = {}
_CACHE_LOCK = threading.Lock()  # guards the two dicts only, never held during a load


def load_pair(preset: str | Preset | None = None, *, draft: str | None = None, target: str | None = None,
              device: str | None = None, dtype: str | torch.dtype | None = None) -> ModelPair:
    """Load (once per process; all sessions share the read-only copy) a draft/target pair.

    Each pair has its own lock, so loading one never blocks steps on a pair already loaded. At
    most SPECVIZ_MAX_PAIRS (default 1) stay cached per device: loading another
    drops the oldest from the cache (runs still using it keep it until they end) and empties the
    accelerator's cache, so a T4 never holds two hub pairs at once."""
    spec = pair_ref(preset, draft=draft, target=target)
    dev = pick_device(device)
    dt = pick_dtype(dev, dtype)
    key = (spec.draft, spec.target, str(dev), str(dt))
    with _CACHE_LOCK:
        if key in _CACHE:
            return _CACHE[key]
        lock = _LOCKS.setdefault(key, threading.Lock())
    with lock:
        with _CACHE_LOCK:
            if key in _CACHE:  # loaded by another session while this one waited
                return _CACHE[key]
        _evict(str(dev), keep=settings.current().max_pairs - 1)
        pair = _load(spec, dev, dt)
        with _CACHE_LOCK:
            _CACHE[key] = pair
        return pair


def _evict(device: str, keep: int) -> None:
    """Drop the oldest cached pairs on `device` until `keep` remain; free the accelerator's cache."""
    with _CACHE_LOCK:
        on_device = [k for k in _CACHE if k[2] == device]
        for key in on_device[: max(len(on_device) - keep, 0)]:
            del _CACHE[key]
    gc.collect()
    if device.startswith("cuda"):
        torch.cuda.empty_cache()


def _load_one(model_id: str, role: str, device: torch.device, dtype: torch.dtype):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    try:
        tokenizer = AutoTokenizer.from_pretrained(model_id)
        model = AutoModelForCausalLM.from_pretrained(model_id, dtype=dtype, trust_remote_code=False)
        return tokenizer, model.to(device).eval()
    except torch.cuda.OutOfMemoryError as err:
        raise ModelLoadError(f"out of memory loading the {role} model {model_id!r} on {device}: "
                             "pick a smaller pair or free the GPU") from err
    except (OSError, ValueError, KeyError) as err:
        where = "local folder" if Path(model_id).exists() else "hub id (is the hub reachable? HF_HUB_OFFLINE is " \
            f"{os.environ.get('HF_HUB_OFFLINE', 'unset')})"
        raise ModelLoadError(f"could not load the {role} model {model_id!r} as a {where}: "
                             f"{str(err).splitlines()[0] if str(err) else type(err).__name__}") from err
    except RuntimeError as err:  # e.g. a device that fails to take the weights
        raise ModelLoadError(f"could not move the {role} model {model_id!r} to {device}: "
                             f"{str(err).splitlines()[0]}") from err


def _load(spec: Preset, device: torch.device, dtype: torch.dtype) -> ModelPair:
    draft_tok, draft = _load_one(spec.draft, "draft", device, dtype)
    target_tok, target = _load_one(spec.target, "target", device, dtype)
    vocab = check_compatible(draft_tok, target_tok)
    for role, model in (("draft", draft), ("target", target)):
        if model.config.get_text_config().vocab_size < vocab:
            raise ModelLoadError(f"the {role} model has {model.config.vocab_size} output rows but the tokenizer {vocab} ids")
    window = min(_context_window(draft), _context_window(target))
    if not settings.current().stateless_steps:  # on ZeroGPU no CUDA work may run outside spaces.GPU
        with torch.inference_mode():  # pay one-off allocation costs now, not in the first timed step
            for model in (draft, target):
                model(torch.zeros((1, 4), dtype=torch.long, device=device), use_cache=True)
    return ModelPair(draft=draft, target=target, tokenizer=target_tok, vocab_size=vocab, device=device, dtype=dtype,
                     name=spec.name, chat=spec.chat, examples=spec.examples, context_window=window, ref=spec)


def _context_window(model) -> int:
    config = model.config.get_text_config()
    for attr in ("max_position_embeddings", "n_positions", "max_sequence_length"):
        if getattr(config, attr, None):
            return int(getattr(config, attr))
    return 2048
