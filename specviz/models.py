"""Draft/target model pairs: presets, loading with `from_pretrained`, device and compatibility.

The bundled Shakespeare pair in assets/models/ loads with the very same calls as a hub pair;
a Space picks its preset with the SPECVIZ_PRESET environment variable.
"""
from __future__ import annotations

import gc
import os
import threading
from dataclasses import dataclass, field
from pathlib import Path

import torch

from .gpu import stateless

ASSETS = Path(__file__).resolve().parents[1] / "assets" / "models"


class ModelLoadError(ValueError):
    """A model could not be loaded or the pair cannot be used together."""


@dataclass(frozen=True)
class Preset:
    """A draft/target pair by reference: hub ids or local folders, loaded with from_pretrained."""
    draft: str
    target: str
    chat: bool | None = False     # wrap prompts in the target's chat template; None: if it has one
    examples: tuple[str, ...] = ()
    description: str = ""
    name: str = ""

    def __post_init__(self):
        if not self.name:
            object.__setattr__(self, "name", f"{self.draft} -> {self.target}")


PairRef = Preset  # the name the run layer uses: any pair, a preset's or the user's own

PRESETS: dict[str, Preset] = {
    "shakespeare": Preset(
        name="shakespeare", draft=str(ASSETS / "shakespeare-draft"), target=str(ASSETS / "shakespeare-target"),
        examples=("ROMEO.\nBut soft, what light", "KING.\nNow is the time", "HAMLET.\nTo be, or not",
                  "Shall I compare thee to a summer's day?\n"),
        description="bundled, offline: 2-layer draft distilled from a 16-layer target, trained on Shakespeare"),
    "smollm2": Preset("HuggingFaceTB/SmolLM2-135M", "HuggingFaceTB/SmolLM2-1.7B", name="smollm2",
                      examples=("The theory of relativity states that",), description="hub, GPU recommended"),
    "qwen2.5": Preset("Qwen/Qwen2.5-0.5B-Instruct", "Qwen/Qwen2.5-3B-Instruct", chat=True, name="qwen2.5",
                      examples=("Explain speculative decoding in two sentences.",), description="hub, chat, GPU recommended"),
    "gpt2": Preset("gpt2", "gpt2-xl", name="gpt2", examples=("In a shocking finding, scientists discovered",),
                   description="hub"),
    "pythia": Preset("EleutherAI/pythia-70m", "EleutherAI/pythia-1.4b", name="pythia",
                     examples=("The capital of France is",), description="hub"),
}


def pair_ref(preset: str | Preset | None = None, *, draft: str | None = None, target: str | None = None) -> Preset:
    """The pair meant by a preset name, a Preset, or --draft/--target (which get the target's chat
    template when its tokenizer has one)."""
    if isinstance(preset, Preset):
        return preset
    if draft or target:
        if not (draft and target):
            raise ModelLoadError("give both a draft and a target model, or a preset")
        return Preset(draft=str(draft), target=str(target), chat=None)
    name = preset or default_preset()
    if name not in PRESETS:
        raise ModelLoadError(f"unknown preset {name!r}; choose one of {sorted(PRESETS)}")
    return PRESETS[name]


MAX_CUSTOM_PARAMS = int(float(os.environ.get("SPECVIZ_MAX_CUSTOM_PARAMS", "4e9")))  # per model, for your own pair


def custom_models_allowed() -> bool:
    """Your own pair: allowed when the app runs locally; on a shared deployment (a Space, where
    SPACE_ID is set) only with SPECVIZ_ALLOW_CUSTOM_MODELS=1."""
    flag = os.environ.get("SPECVIZ_ALLOW_CUSTOM_MODELS")
    if flag is not None:
        return flag.lower() in ("1", "true", "yes")
    return not os.environ.get("SPACE_ID")


def _estimated_params(model_id: str) -> int:
    """Parameters a model's config implies (embeddings + 12 d^2 per layer), before any weight is read."""
    from transformers import AutoConfig

    config = AutoConfig.from_pretrained(model_id, trust_remote_code=False).get_text_config()
    width = getattr(config, "hidden_size", None) or getattr(config, "n_embd", 0)
    layers = getattr(config, "num_hidden_layers", None) or getattr(config, "n_layer", 0)
    return int(width * getattr(config, "vocab_size", 0) + 12 * width * width * layers)


def custom_pair(draft: str, target: str) -> Preset:
    """A user's own pair (hub ids or local folders), checked against the deployment's policy and size cap."""
    if not (draft and target):
        raise ModelLoadError("give both a draft and a target model (hub ids or local folders), or clear both")
    if not custom_models_allowed():
        raise ModelLoadError("this deployment does not load your own models (set SPECVIZ_ALLOW_CUSTOM_MODELS=1 to allow)")
    for role, model_id in (("draft", draft), ("target", target)):
        try:
            params = _estimated_params(model_id)
        except (OSError, ValueError, KeyError) as err:
            raise ModelLoadError(f"could not read the {role} model's config {model_id!r}: "
                                 f"{str(err).splitlines()[0] if str(err) else type(err).__name__}") from err
        if params > MAX_CUSTOM_PARAMS:
            raise ModelLoadError(f"the {role} model {model_id!r} has about {params / 1e9:.1f}B parameters; "
                                 f"this deployment's cap is {MAX_CUSTOM_PARAMS / 1e9:.1f}B (SPECVIZ_MAX_CUSTOM_PARAMS)")
    return pair_ref(draft=draft, target=target)


def default_preset() -> str:
    name = os.environ.get("SPECVIZ_PRESET", "shakespeare")
    if name not in PRESETS:
        raise ModelLoadError(f"SPECVIZ_PRESET={name!r} is not a preset; choose one of {sorted(PRESETS)}")
    return name


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


MAX_RESIDENT_PAIRS = int(os.environ.get("SPECVIZ_MAX_PAIRS", "1"))  # pairs kept loaded per device

_CACHE: dict[tuple, ModelPair] = {}
_LOCKS: dict[tuple, threading.Lock] = {}
_CACHE_LOCK = threading.Lock()  # guards the two dicts only, never held during a load


def load_pair(preset: str | Preset | None = None, *, draft: str | None = None, target: str | None = None,
              device: str | None = None, dtype: str | torch.dtype | None = None) -> ModelPair:
    """Load (once per process; all sessions share the read-only copy) a draft/target pair.

    Each pair has its own lock, so loading one never blocks steps on a pair already loaded. At
    most MAX_RESIDENT_PAIRS (SPECVIZ_MAX_PAIRS, default 1) stay cached per device: loading another
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
        _evict(str(dev), keep=MAX_RESIDENT_PAIRS - 1)
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
    if not stateless():  # on ZeroGPU no CUDA work may run outside spaces.GPU
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
