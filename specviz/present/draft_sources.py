"""How the step card and the narration tell where a round's drafts came from, one view per drafter.

A step's trace names its drafter (`StepTrace.source.kind`, the engine's registry name) and what it told of the
round (`source.details`). The card asks `view_for(kind)` for the sentences that differ between drafters: the
draft phase, the accept chance's formula, why the residual looks as it does. A drafter without a view of its own
is told in a plain form that names it, so a new drafter reaches the page before anyone writes it a view.
"""
from __future__ import annotations

import html

from ..core.notation import show
from ..core.trace import LookupTrace, StepTrace
from ..engine.decoding.drafters import ModelDraft, PromptLookup
from .i18n import tr


def _esc(text: str) -> str:
    return html.escape(show(text))


class SourceView:
    """The plain form: the drafter named by kind, its q shown as the drafter gave it."""

    def draft_line(self, trace: StepTrace, drafted: str, t: str, d: str, lang: str) -> str:
        """The draft phase's sentence on the card (`drafted`: the drafted tokens, as HTML)."""
        if not trace.positions:
            return tr(lang, "card.draft_none", kind=_esc(trace.source.kind), t=t)
        return tr(lang, "card.draft_by", kind=_esc(trace.source.kind), g=len(trace.positions), tokens=drafted)

    def draft_note(self, trace: StepTrace, d: str, lang: str) -> str:
        """A further line of the draft phase ('' for none)."""
        return ""

    def chance_name(self, t: str, d: str, lang: str) -> str:
        """The accept chance's formula before its value."""
        return f'<span class="chance-name">min(1, {t}/{d}) = </span>'

    def why_residual(self, t: str, d: str, lang: str) -> str:
        """Why the replacement after a rejection comes from the residual."""
        return tr(lang, "why.residual", t=t, d=d)

    def narration_line(self, trace: StepTrace, drafted: str, t: str, d: str, lang: str) -> str:
        """The narration's draft sentence (Markdown; `drafted`: tokens with their q)."""
        return tr(lang, "card.nar_draft_by", kind=show(trace.source.kind), g=len(trace.positions), tokens=drafted)

    def nothing_proposed(self, trace: StepTrace, lang: str) -> str:
        """The round summary's first clause when nothing was proposed."""
        return tr(lang, "card.sum_none", n=trace.step)


class ModelView(SourceView):
    """The draft model: it sampled gamma tokens (and may read the target's hidden states)."""

    def draft_line(self, trace, drafted, t, d, lang):
        return tr(lang, "card.draft", g=trace.gamma, tokens=drafted)

    def draft_note(self, trace, d, lang):
        if not trace.source.details.get("reads_target"):
            return ""
        return f'<div class="phase draft-reads" data-phase="draft">{tr(lang, "card.draft_reads", d=d)}</div>'

    def narration_line(self, trace, drafted, t, d, lang):
        return tr(lang, "nar.draft", g=trace.gamma, tokens=drafted)


class LookupView(SourceView):
    """Prompt lookup: the copied tokens where they stand earlier; q is one-hot, so the accept chance is p(x)."""

    @staticmethod
    def where(look: LookupTrace, lang: str) -> str:
        """Where the lookup found its match, or (no match) where it looked."""
        if look.ngram:
            return tr(lang, "lookup.prompt" if look.in_prompt else "lookup.output")
        return tr(lang, "lookup.prompt" if look.searched == "prompt" else "lookup.context")

    @staticmethod
    def copied_from(look: LookupTrace) -> str:
        """The copied drafts where they stand earlier: context, the matched n-gram (dashed box), the copied
        tokens (solid box, bold), what followed them."""
        def run(texts: list[str]) -> str:  # spaces kept (it is text to read), newlines as ⏎ (the card keeps its height)
            return html.escape("".join(texts).replace("\n", "⏎"))

        return (f'<span class="lookup-source"><code>…{run(look.before)}<mark class="lookup-ngram">{run(look.matched)}'
                f'</mark><mark class="lookup-copied">{run(look.copied)}</mark>{run(look.after)}…</code></span>')

    def draft_line(self, trace, drafted, t, d, lang):
        look = LookupTrace(**trace.source.details)
        where = self.where(look, lang)
        if not look.ngram:
            return tr(lang, "card.lookup_none", where=where, t=t)
        return tr(lang, "card.lookup", n=look.ngram, where=where, g=len(trace.positions),
                  source=self.copied_from(look), t=t, d=d)

    def chance_name(self, t, d, lang):
        return f'<span class="chance-name">{tr(lang, "chance.lookup", t=t)}</span>'

    def why_residual(self, t, d, lang):
        return tr(lang, "why.lookup", t=t, d=d)

    def narration_line(self, trace, drafted, t, d, lang):
        look = LookupTrace(**trace.source.details)
        where = self.where(look, lang)
        if not look.ngram:
            return tr(lang, "nar.lookup_none", where=where)
        return tr(lang, "nar.lookup", n=look.ngram, ngram=f"“{show(''.join(look.matched))}”", where=where,
                  g=len(trace.positions), tokens=drafted, t=t, d=d)

    def nothing_proposed(self, trace, lang):
        return tr(lang, "sum.lookup_none", n=trace.step)


VIEWS: dict[str, SourceView] = {ModelDraft.kind: ModelView(), PromptLookup.kind: LookupView()}


def view_for(kind: str) -> SourceView:
    """The view of drafter `kind`, or the plain form for a drafter that has none."""
    return VIEWS.get(kind) or SourceView()
