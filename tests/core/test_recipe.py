"""A link's recipe: it round-trips, and a tampered, cut, oversized or other-version link is refused by name."""
from __future__ import annotations

import base64
import json
import zlib

import pytest

from specviz.core.recipe import (
    MAX_LINK_CHARS,
    MAX_RECIPE_BYTES,
    Producer,
    Recipe,
    RecipeError,
    decode_recipe,
    encode_recipe,
    token_digest,
)
from specviz.core.trace import Correction, Counters, EmittedToken, StepTrace

NAMES = ("preset", "prompt", "gamma", "seed")
PRODUCER = Producer(specviz="0.1.0", torch="2.13.0", transformers="5.23.0", device="cpu", dtype="float32",
                    date="2026-11-26")
RECIPE = Recipe(settings={"preset": "shakespeare", "prompt": "ROMEO.\nBut soft, 光", "gamma": 4, "seed": 8}, step=3,
                digest="0123456789abcdef", producer=PRODUCER)


def packed(data) -> str:
    """A link body built by hand (the oracle: zlib and base64 directly, not the module's encoder)."""
    return "v1." + base64.urlsafe_b64encode(zlib.compress(json.dumps(data).encode())).decode().rstrip("=")


def test_a_recipe_round_trips_through_its_link_text():
    text = encode_recipe(RECIPE)
    assert text.startswith("v1.") and all(c.isalnum() or c in "-_." for c in text)
    assert decode_recipe(text, NAMES) == RECIPE
    assert decode_recipe(f"https://example.org/?lang=ja#run={text}", NAMES) == RECIPE  # the whole link works too


def test_a_hand_built_recipe_decodes_field_by_field():
    data = {"v": 1, "settings": dict(RECIPE.settings), "step": 3, "digest": "0123456789abcdef",
            "producer": {"torch": "2.13.0", "device": "cuda"}}
    recipe = decode_recipe(packed(data), NAMES)
    assert recipe.step == 3 and recipe.producer.device == "cuda" and recipe.producer.specviz == "unknown"


@pytest.mark.parametrize("cut", [10, 40, -3])
def test_a_cut_link_is_refused_saying_so(cut):
    text = encode_recipe(RECIPE)
    with pytest.raises(RecipeError, match="cut|changed"):
        decode_recipe(text[:cut], NAMES)


def test_a_changed_character_is_refused():
    text = encode_recipe(RECIPE)
    middle = len(text) // 2
    changed = text[:middle] + ("A" if text[middle] != "A" else "B") + text[middle + 1:]
    with pytest.raises(RecipeError):
        decode_recipe(changed, NAMES)


def test_another_format_version_is_refused_naming_both():
    text = encode_recipe(RECIPE)
    with pytest.raises(RecipeError, match="format v2.*reads v1"):
        decode_recipe("v2." + text[3:], NAMES)
    with pytest.raises(RecipeError, match="no version mark"):
        decode_recipe(text[3:], NAMES)


def test_an_oversized_link_and_a_zlib_bomb_are_refused_before_parsing():
    with pytest.raises(RecipeError, match=f"over the {MAX_LINK_CHARS}"):
        decode_recipe("v1." + "A" * MAX_LINK_CHARS, NAMES)
    bomb = "v1." + base64.urlsafe_b64encode(zlib.compress(b" " * (50 * MAX_RECIPE_BYTES), 9)).decode().rstrip("=")
    assert len(bomb) < MAX_LINK_CHARS
    with pytest.raises(RecipeError, match=f"more than {MAX_RECIPE_BYTES} bytes"):
        decode_recipe(bomb, NAMES)


def test_settings_must_be_exactly_the_named_scalars():
    base = {"v": 1, "step": 1, "digest": "0123456789abcdef", "producer": {}}
    with pytest.raises(RecipeError, match="lacks seed"):
        decode_recipe(packed({**base, "settings": {"preset": "x", "prompt": "", "gamma": 4}}), NAMES)
    with pytest.raises(RecipeError, match="unknown colour"):
        decode_recipe(packed({**base, "settings": {**RECIPE.settings, "colour": 1}}), NAMES)
    with pytest.raises(RecipeError, match="setting gamma must be a number or text"):
        decode_recipe(packed({**base, "settings": {**RECIPE.settings, "gamma": {"__class__": "os.system"}}}), NAMES)
    with pytest.raises(RecipeError, match="digest must be 16 hex digits"):
        decode_recipe(packed({**base, "settings": RECIPE.settings, "digest": "xyz"}), NAMES)
    with pytest.raises(RecipeError, match="step must be a whole number"):
        decode_recipe(packed({**base, "settings": RECIPE.settings, "step": 0}), NAMES)


def test_a_too_long_prompt_is_refused_when_the_link_is_made():
    noise = "".join(chr(0x4E00 + (i * 7919) % 20000) for i in range(6000))  # incompressible text
    with pytest.raises(RecipeError, match="shorten the prompt"):
        encode_recipe(Recipe(settings={**RECIPE.settings, "prompt": noise}, step=1, digest="0" * 16,
                             producer=PRODUCER))


def test_producer_differences_name_each_version_but_never_the_date():
    other = Producer(**{**PRODUCER.__dict__, "torch": "2.12.1", "device": "cuda", "date": "2020-01-01"})
    said = PRODUCER.differences(other)
    assert said == ["torch 2.12.1 here, 2.13.0 in the recording", "device cuda here, cpu in the recording"]


def _step(n: int, ids: list[int], kinds: list[str], rejected: tuple = ()) -> StepTrace:
    emitted = [EmittedToken(id=i, text=str(i), kind=k, step=n) for i, k in zip(ids, kinds)]
    return StepTrace(step=n, gamma=2, kl_budget=0.0, positions=[], n_accepted=0,
                     correction=Correction(kind=kinds[-1], position=0, token=ids[-1], text="", candidates=[],
                                           final_other=0.0),
                     emitted=emitted, draft_ms=0, target_ms=0, verify_ms=0, counters=Counters(),
                     rejected=[EmittedToken(id=i, text="", kind="rejected", step=n) for i in rejected])


def test_the_digest_changes_with_any_token_its_kind_or_a_rejected_draft_and_stops_at_the_step():
    run = [_step(1, [5, 6], ["accepted", "resampled"], (9,)), _step(2, [7], ["bonus"])]
    digest = token_digest(run, 1)
    assert len(digest) == 16 and digest == token_digest(run[:1])
    assert token_digest([_step(1, [5, 8], ["accepted", "resampled"], (9,))]) != digest
    assert token_digest([_step(1, [5, 6], ["accepted", "bonus"], (9,))]) != digest
    assert token_digest([_step(1, [5, 6], ["accepted", "resampled"], (3,))]) != digest
    assert token_digest(run) != digest
