"""The page's settings by name: one record of what a Step sends, and its reading into a run's settings.

`PageSettings`' fields are the /step API's parameters in their published order: a new setting is a new field at
the end, so older positional calls keep their meaning. The page builds one from its components (app/wiring.py
sends each component by its field's name) and every handler reads fields, never positions. Values are kept as
sent; `settings_from` validates them, naming the setting and its range.
"""
from __future__ import annotations

from dataclasses import MISSING, dataclass, fields

from ..core.config import GAMMA_AUTO, DecodeConfig
from ..engine.decoding.decoders import clean_text
from ..engine.decoding.drafters import DEFAULT_DRAFTER, check_drafter
from ..engine.models.policy import custom_pair, visitor_pair
from ..engine.serving.run import RunSettings

PAGE_MAX_NEW_TOKENS = 200  # the page's slider, and the /step API's limit (a session's traces stay small)
# The page's first settings (the pair's first example prompt, gamma 4): a first lesson (the recorded lesson 1), a
# kept prefix and a resample, then bonus tokens; `loadtest --race-vs-bench` races these too.
DEFAULT_TEMPERATURE, DEFAULT_SEED, DEFAULT_MAX_NEW_TOKENS = 0.5, 110, 80


@dataclass(frozen=True)
class PageSettings:
    """What a Step, a Play tick or a race sends, as sent (no field is trusted before `settings_from`)."""
    notation: object      # whose letters the figures use (core.notation)
    preset: object        # a draft/target pair offered by this server
    prompt: object
    gamma: object         # 1..16, or "auto" (the slider's 0): a draft length that adapts
    temperature: object
    top_k: object         # 0: off
    top_p: object         # 1: off
    kl_budget: object     # 0: exact; > 0: mentored decoding
    seed: object
    max_new_tokens: object
    draft_model: object   # with target_model: your own pair instead of the preset
    target_model: object
    drafts: object = 1    # defaults from here on: older clients never sent these
    lang: object = "en"
    drafter: object = DEFAULT_DRAFTER


STEP_PARAMETERS = tuple(f.name for f in fields(PageSettings))   # /step's public order
RACE_PARAMETERS = tuple(name for name in STEP_PARAMETERS if name != "notation")  # a race draws no figures
_DECODE_KNOBS = tuple(f for f in fields(PageSettings) if f.name in {g.name for g in fields(DecodeConfig)})


def text_value(name: str, value) -> str:
    """A text field as sent: None is empty, anything but text is refused by name."""
    if value is None:
        return ""
    if not isinstance(value, str):
        raise ValueError(f"{name} must be text, not {value!r}")
    return value


GAMMA_AUTO_POSITION = 0  # the γ slider's "auto" position: a draft length that adapts (core.draft_length)


def page_gamma(value):
    """gamma as sent: the slider's auto position (0) or "auto" means gamma auto (at most GAMMA_MAX_DEFAULT drafts a
    round); anything else goes to DecodeConfig as it is (an API client's integer gamma keeps its meaning)."""
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value == GAMMA_AUTO_POSITION:
        return GAMMA_AUTO
    return value


def settings_from(settings: PageSettings) -> RunSettings:
    """The page's settings as RunSettings; bad values raise ValueError / ModelLoadError naming the setting.
    Every field DecodeConfig also has goes to it (None, where the field has a default, means that default);
    draft and target model fields, when filled, replace the preset (see models.custom_pair)."""
    knobs = {f.name: f.default if getattr(settings, f.name) is None and f.default is not MISSING
             else getattr(settings, f.name) for f in _DECODE_KNOBS}
    knobs["gamma"] = page_gamma(knobs["gamma"])
    config = check_drafter(DecodeConfig.from_knobs(**knobs))  # the registry names the drafters and what each runs
    if config.max_new_tokens > PAGE_MAX_NEW_TOKENS:
        raise ValueError(f"max_new_tokens must be a whole number in 1..{PAGE_MAX_NEW_TOKENS} here, "
                         f"not {settings.max_new_tokens!r} (the command line goes further)")
    draft_model = text_value("draft_model", settings.draft_model).strip()
    target_model = text_value("target_model", settings.target_model).strip()
    pair = custom_pair(draft_model, target_model) if draft_model or target_model else visitor_pair(settings.preset)
    return RunSettings(pair=pair, prompt=clean_text(text_value("prompt", settings.prompt)), config=config)
