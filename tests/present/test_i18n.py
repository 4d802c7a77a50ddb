"""The locale files: valid JSON, every key in every language with the same placeholders, none empty; the
catalogue the page reads is exactly those files; and the locale picked from the browser."""
from __future__ import annotations

import json
import pathlib
import string

import pytest

from specviz.present.i18n import CATALOGUE, LANGUAGES, pick, tr

LOCALES = pathlib.Path(__file__).resolve().parents[2] / "specviz" / "present" / "locales"


def placeholders(text: str) -> set[str]:
    return {name for _, name, _, _ in string.Formatter().parse(text) if name}


def read_locale(path: pathlib.Path) -> dict:
    """A locale file parsed strictly: UTF-8, a JSON object of text values, no key given twice."""
    def no_repeats(pairs):
        keys = [k for k, _ in pairs]
        assert len(keys) == len(set(keys)), (path.name, sorted({k for k in keys if keys.count(k) > 1}))
        return dict(pairs)
    texts = json.loads(path.read_text(encoding="utf-8"), object_pairs_hook=no_repeats)
    assert isinstance(texts, dict) and all(isinstance(v, str) for v in texts.values()), path.name
    return texts


@pytest.fixture(scope="module")
def files() -> dict[str, dict]:
    return {path.stem: json.loads(path.read_text(encoding="utf-8")) for path in sorted(LOCALES.glob("*.json"))}


def test_there_is_one_valid_locale_file_per_language():
    paths = sorted(LOCALES.glob("*.json"))
    assert {path.stem for path in paths} == set(LANGUAGES)
    for path in paths:
        read_locale(path)


def test_every_key_exists_in_every_language_in_the_same_order(files):
    """The same order too, so line N is the same key in every file and a translator reads them side by side."""
    keys = list(files["en"])
    for code, texts in files.items():
        assert set(texts) == set(keys), (code, set(keys) ^ set(texts))
        assert list(texts) == keys, code


def test_no_text_is_empty(files):
    assert [(code, k) for code, texts in files.items() for k, v in texts.items() if not v.strip()] == []


def test_placeholders_match_across_languages(files):
    for key, text in files["en"].items():
        for code, texts in files.items():
            assert placeholders(texts[key]) == placeholders(text), (code, key)


def test_the_files_are_written_as_the_house_style_says(files):
    """2-space indent, the characters themselves (no \\u escapes), a final newline: diffs stay readable."""
    for code, texts in files.items():
        written = (LOCALES / f"{code}.json").read_text(encoding="utf-8")
        assert written == json.dumps(texts, ensure_ascii=False, indent=2) + "\n", code


def test_the_catalogue_is_the_files(files):
    assert {code: dict(texts) for code, texts in CATALOGUE.items()} == files
    assert list(CATALOGUE) == list(LANGUAGES)


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

    md = MarkdownIt("commonmark")
    for lang, catalogue in CATALOGUE.items():
        for key, text in catalogue.items():
            if "**" in text:
                assert "**" not in md.renderInline(text), (lang, key)
