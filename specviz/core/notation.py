"""Letters and number formats shared by every renderer, so one quantity reads the same everywhere.

The sources disagree on letters; the user picks a convention by its source. The code itself only
says `target_probs` and `draft_probs`. The uniform draw is always u; the accept chance is written
out (min(1, p/q) when exact, "mentored accept chance" when lossy), never a second letter.
"""
from __future__ import annotations

import warnings

# key -> (target letter, draft letter, label naming the sources)
NOTATIONS = {
    "leviathan": ("p", "q", "Leviathan et al. 2023: p target, q draft"),
    "chen": ("q", "p", "Chen et al. 2023 and Tran-Thien's mentored decoding: q target, p draft"),
    "masada": ("φ", "θ", "Masada's lecture slides: φ target, θ draft"),
}
# Keys of earlier versions, still accepted with a DeprecationWarning: "deepmind" named Chen et al.'s
# lab, and "seed004" a source file rather than its author.
DEPRECATED_KEYS = {"deepmind": "chen", "seed004": "masada"}


def notation_key(notation: str) -> str:
    if not isinstance(notation, str):
        raise ValueError(f"unknown notation {notation!r}; choose one of {sorted(NOTATIONS)}")
    key = DEPRECATED_KEYS.get(notation, notation)
    if key != notation:
        warnings.warn(f"notation {notation!r} is deprecated: use {key!r}", DeprecationWarning, stacklevel=3)
    if key not in NOTATIONS:
        raise ValueError(f"unknown notation {notation!r}; choose one of {sorted(NOTATIONS)}")
    return key


def letters(notation: str) -> tuple[str, str]:
    """(target letter, draft letter) of a notation."""
    return NOTATIONS[notation_key(notation)][:2]


def num(x: float) -> str:
    """A probability readable at any scale: 0.42, 0.031, 2.1e-05."""
    return f"{x:.2f}" if x >= 0.095 or x == 0 else f"{x:.2g}" if x >= 1e-3 else f"{x:.1e}"


def show(text: str) -> str:
    """A token's text made visible: spaces and newlines as symbols."""
    return text.replace(" ", "␣").replace("\n", "⏎").replace("\t", "⇥") or "∅"


def label(text: str, width: int = 8) -> str:
    """A token's visible text cut to `width` characters, for axis labels that must not overflow."""
    shown = show(text)
    return shown if len(shown) <= width else shown[: width - 1] + "…"


P_VALUE_FLOOR = 1e-300  # below this a float64 chi-square p-value has underflowed: it is not 0


def p_value_text(p_value: float) -> str:
    """A chi-square p-value as text; one that underflowed reads "< 1e-300", never "0"."""
    return f"< {P_VALUE_FLOOR:g}" if p_value < P_VALUE_FLOOR else f"{p_value:.3g}"
