"""#algorithm: speculative sampling as short pseudo-code beside the card (Leviathan, Kalman and Matias, "Fast
Inference from Transformers via Speculative Decoding", ICML 2023, Algorithm 1), in the notation's letters and the
page's language, one version per rule: exact, T = 0 (the argmax test), mentored decoding (a KL budget), prompt
lookup (q one-hot) and several drafts (the tree's rule: SpecInfer's, Miao et al., ASPLOS 2024).

Each line has a data-line name; each part of the step card names the line it executes (`parts.part`). The page
(page.js) shows the version the card's data-algo names and marks the line of the last part shown with
aria-current="step", so the lit line follows the phase reveal and predict mode. Catalogue keys algo.<rule>.<line>.
"""
from __future__ import annotations

from ..core.notation import letters
from .i18n import CATALOGUE, tr

LINES = {  # (line, indent) in the order the algorithm runs them
    "exact": (("draft", 0), ("verify", 0), ("loop", 0), ("u", 1), ("test", 1), ("reject", 1), ("bonus", 0)),
    "greedy": (("draft", 0), ("verify", 0), ("loop", 0), ("test", 1), ("reject", 1), ("bonus", 0)),
    "mentored": (("draft", 0), ("verify", 0), ("loop", 0), ("u", 1), ("test", 1), ("reject", 1), ("bonus", 0)),
    "lookup": (("draft", 0), ("verify", 0), ("loop", 0), ("u", 1), ("test", 1), ("reject", 1), ("bonus", 0)),
    "tree": (("draft", 0), ("verify", 0), ("loop", 0), ("u", 1), ("test", 1), ("residual", 1), ("reject", 0),
             ("bonus", 0)),
}


def line_text(rule: str, line: str, lang: str, t: str, d: str) -> str:
    """A line in `lang`: the rule's own wording where it differs, else the exact rule's."""
    key = f"algo.{rule}.{line}" if f"algo.{rule}.{line}" in CATALOGUE["en"] else f"algo.exact.{line}"
    return tr(lang, key, t=t, d=d)


def algorithm_html(lang: str = "en", notation: str = "leviathan") -> str:
    """Every rule's version; page.js shows the card's and lights its current line."""
    t, d = letters(notation)
    blocks = []
    for rule, lines in LINES.items():
        items = "".join(f'<li data-line="{line}" style="--indent:{indent}">{line_text(rule, line, lang, t, d)}</li>'
                        for line, indent in lines)
        blocks.append(f'<ol class="algo" data-algo="{rule}"{"" if rule == "exact" else " hidden"}>{items}</ol>')
    return (f'<div class="algorithm"><div class="algo-head">{tr(lang, "algo.head")}</div>{"".join(blocks)}'
            f'<div class="algo-note muted">{tr(lang, "algo.note")}</div></div>')
