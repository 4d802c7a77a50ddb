"""Draft/target pairs by reference: the presets, your own pair's policy, and the default.

A pair is named by hub ids or local folders and loaded by `engine.loading.load_pair` with
`from_pretrained`; the bundled Shakespeare pair in assets/models/ loads with the very same calls.
"""
from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from pathlib import Path

from . import settings


def _assets() -> Path:
    """assets/models/ beside the package in a checkout; the `specviz.assets` data package once installed."""
    checkout = Path(__file__).resolve().parents[2] / "assets" / "models"
    if checkout.is_dir():
        return checkout
    return Path(importlib.util.find_spec("specviz.assets").submodule_search_locations[0]) / "models"


ASSETS = _assets()


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


def custom_models_allowed() -> bool:
    """Your own pair: allowed when the app runs locally; on a shared deployment (a Space, where
    SPACE_ID is set) only with SPECVIZ_ALLOW_CUSTOM_MODELS=1."""
    return settings.current().allow_custom_models


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
        cap = settings.current().max_custom_params
        if params > cap:
            raise ModelLoadError(f"the {role} model {model_id!r} has about {params / 1e9:.1f}B parameters; "
                                 f"this deployment's cap is {cap / 1e9:.1f}B (SPECVIZ_MAX_CUSTOM_PARAMS)")
    return pair_ref(draft=draft, target=target)


def default_preset() -> str:
    name = settings.current().preset
    if name not in PRESETS:
        raise ModelLoadError(f"SPECVIZ_PRESET={name!r} is not a preset; choose one of {sorted(PRESETS)}")
    return name
