"""The page's words in English, Chinese and Japanese: picking the language and formatting a text.

The texts are data, one file per language in locales/ (key -> text, the same keys in the same order in
each file, so line N is the same key in every language); docs/translating.md is the translator's guide.
Letters and formulas (p, q, u, γ, min(1, p/q)) arrive as format arguments ({t}, {d}) so the notation
switch works in every language. English's "(s)" plural is code, not data: tr() resolves it from the number.
"""
from __future__ import annotations

import json
import re
from importlib import resources
from types import MappingProxyType

LANGUAGES = {"en": "English", "zh": "中文", "ja": "日本語"}   # the order of the page's language switch
DEFAULT = "en"


def _load(code: str) -> MappingProxyType:
    """One language's texts from locales/<code>.json, read-only (importlib.resources also reads a zipped install)."""
    text = (resources.files(__package__) / "locales" / f"{code}.json").read_text(encoding="utf-8")
    return MappingProxyType(json.loads(text))


CATALOGUE = MappingProxyType({code: _load(code) for code in LANGUAGES})


def pick(locale: str | None) -> str:
    """The catalogue for a browser locale or Accept-Language value: "zh-CN" -> zh, "ja-JP" -> ja, else en.

    Traditional Chinese (zh-TW, zh-HK, zh-Hant) also gets zh, the Simplified catalogue: a reader of
    Traditional characters reads Simplified far more easily than English, and there is no zh-Hant one."""
    for part in (locale or "").replace("_", "-").split(","):
        code = part.split(";")[0].strip().lower().split("-")[0]
        if code in LANGUAGES:
            return code
    return DEFAULT


def tr(lang: str, key: str, **args) -> str:
    """The text of `key` in `lang` (English where the language is unknown), formatted with args."""
    code = lang if isinstance(lang, str) and lang in CATALOGUE else DEFAULT
    text = CATALOGUE[code][key].format(**args) if args else CATALOGUE[code][key]
    return _english_plurals(text) if code == "en" else text


def _english_plurals(text: str) -> str:
    """English's "(s)" resolved from the number before it: "1 token", "3 tokens", "positions 2–4", "position 3"."""
    text = re.sub(r"\b1 token\(s\)", "1 token", text).replace("token(s)", "tokens")
    text = re.sub(r"position\(s\) (\d+[–,])", r"positions \1", text).replace("position(s)", "position")
    text = re.sub(r"\b1 ([a-z]+)\(s\)", r"1 \1", text)   # "1 step(s)", "1 candidate(s)"
    return re.sub(r"([a-z])\(s\)", r"\1s", text)
