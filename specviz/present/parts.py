"""The step card's parts as the page reveals them: each part's attributes, shared by the chain and tree cards.

A part has a name (`core.answer_key.card_parts`: predict mode hides a part until its question is answered), the
line of the algorithm it executes (#algorithm lights the line of the last part shown) and its classes.
"""
from __future__ import annotations

NOTHING_HIDDEN: frozenset = frozenset()


def part(name: str, hidden: frozenset, line: str = "", cls: str = "") -> str:
    """` data-part="name" data-line="line" class="cls [sv-hidden]"`: sv-hidden keeps the part's place while hidden."""
    classes = " ".join(c for c in (cls, "sv-hidden" if name in hidden else "") if c)
    return (f' data-part="{name}"' + (f' data-line="{line}"' if line else "")
            + (f' class="{classes}"' if classes else ""))
