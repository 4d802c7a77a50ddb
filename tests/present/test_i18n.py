"""The catalogue: every key in every language, the same placeholders, and the locale picked from the browser."""
from __future__ import annotations

import string

from specviz.present.i18n import CATALOGUE, LANGUAGES, pick, tr


def placeholders(text: str) -> set[str]:
    return {name for _, name, _, _ in string.Formatter().parse(text) if name}


def test_every_key_exists_in_every_language():
    keys = set(CATALOGUE["en"])
    for code in LANGUAGES:
        assert set(CATALOGUE[code]) == keys, (code, keys ^ set(CATALOGUE[code]))


def test_placeholders_match_across_languages():
    for key, text in CATALOGUE["en"].items():
        for code in LANGUAGES:
            assert placeholders(CATALOGUE[code][key]) == placeholders(text), (code, key)


FORMULAS = {"source.mentored", "chance.lookup"}  # "mentored s", "min(1, p/1) = p(x)": the same in every language


def test_translations_are_not_english_copies():
    same = [k for k in CATALOGUE["en"] if k not in FORMULAS and CATALOGUE["zh"][k] == CATALOGUE["en"][k] == CATALOGUE["ja"][k]
            and any(c.isalpha() for c in CATALOGUE["en"][k]) and " " in CATALOGUE["en"][k]]
    assert same == []


def test_browser_locales_pick_the_catalogue():
    assert [pick(x) for x in ("zh-CN", "ja-JP", "en-US", "fr-FR", "", None, "de;q=1, ja;q=0.8")] == \
        ["zh", "ja", "en", "en", "en", "en", "ja"]


def test_unknown_language_falls_back_to_english():
    assert tr("xx", "btn.step") == "Step" and tr("zh", "btn.step") == "单步" and tr("ja", "btn.step") == "ステップ"


def test_bold_markdown_renders_in_every_language():
    """CommonMark does not close ** after full-width punctuation: the ** must sit inside it."""
    from markdown_it import MarkdownIt

    from specviz.present.i18n import CATALOGUE

    md = MarkdownIt("commonmark")
    for lang, catalogue in CATALOGUE.items():
        for key, text in catalogue.items():
            if "**" in text:
                assert "**" not in md.renderInline(text), (lang, key)
