"""How the step card and the narration tell where a round's drafts came from, one view per drafter.

A step's trace names its drafter (`StepTrace.source.kind`, the engine's registry name) and what it told of the
round (`source.details`). The card asks `view_for(kind)` for the sentences that differ between drafters: the
draft phase, the accept chance's formula, why the residual looks as it does. A drafter without a view of its own
is told in a plain form that names it, so a new drafter reaches the page before anyone writes it a view.
"""
from __future__ import annotations

import dataclasses
import html

from ..core.notation import num, show
from ..core.trace import DraftSource, LookupTrace, StepTrace
from ..engine.decoding.drafters import HybridDraft, ModelDraft, PromptLookup
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


class HybridView(SourceView):
    """The hybrid drafter (`--drafter auto`): the chosen drafter's view, the card naming which was chosen and why."""

    @staticmethod
    def chosen(trace: StepTrace) -> tuple[SourceView, StepTrace]:
        """The chosen drafter's view and the trace as that drafter's own (its source and details)."""
        kind = trace.source.details.get("chose", ModelDraft.kind)
        own = dataclasses.replace(trace, source=DraftSource(kind=kind, details=trace.source.details.get("details", {})))
        return VIEWS.get(kind) or SourceView(), own

    @staticmethod
    def why(own: StepTrace, lang: str) -> str:
        return tr(lang, "hybrid.lookup" if own.source.kind == PromptLookup.kind else "hybrid.model")

    def draft_line(self, trace, drafted, t, d, lang):
        view, own = self.chosen(trace)
        return f'{view.draft_line(own, drafted, t, d, lang)} <span class="hybrid-choice">{self.why(own, lang)}</span>'

    def draft_note(self, trace, d, lang):
        view, own = self.chosen(trace)
        return view.draft_note(own, d, lang)

    def narration_line(self, trace, drafted, t, d, lang):
        view, own = self.chosen(trace)
        return f"{view.narration_line(own, drafted, t, d, lang)} {self.why(own, lang)}"

    def nothing_proposed(self, trace, lang):
        view, own = self.chosen(trace)
        return view.nothing_proposed(own, lang)


VIEWS: dict[str, SourceView] = {ModelDraft.kind: ModelView(), PromptLookup.kind: LookupView(),
                                HybridDraft.kind: HybridView()}


def view_for(kind: str) -> SourceView:
    """The view of drafter `kind`, or the plain form for a drafter that has none."""
    return VIEWS.get(kind) or SourceView()


def view_of(trace: StepTrace) -> SourceView:
    """The view of the drafter that actually drafted `trace`'s round: for the hybrid, the one it chose (whose
    accept chance and residual the card explains)."""
    view = view_for(trace.source.kind)
    return view.chosen(trace)[0] if isinstance(view, HybridView) else view


def stop_note(trace: StepTrace, lang: str) -> str:
    """With gamma auto: how many tokens were drafted and why no more (core.draft_length), e.g. "drafted 2 (γ auto,
    at most 8): the draft gave ␣the 0.21, so all 2 are kept with chance ≈ 0.12 < 0.35, the least at which another
    pays here"; '' for a fixed gamma."""
    stop = trace.draft_stop
    if stop is None or stop.reason == "none":
        return ""
    last = trace.positions[-1] if trace.positions else None
    values = {"k": stop.drafted, "cap": stop.gamma_max,
              "token": f"<code>{_esc(last.draft_text)}</code>" if last is not None else "",
              "s": num(stop.confidences[-1]) if stop.confidences else "", "a": num(stop.keep[-1]) if stop.keep else "",
              "P": num(stop.survival), "needed": num(stop.needed) if stop.needed is not None else ""}
    copied = stop.source == PromptLookup.kind
    if stop.reason == "doubt" and stop.needed is not None and stop.needed >= 1:  # no chance could reach it: costs stop
        key = "stop.never" + ("_lookup" if copied else "")
    elif stop.reason == "doubt":
        key = "stop.doubt" + ("_lookup" if copied else "") + ("_one" if stop.drafted == 1 else "")
    else:
        key = f"stop.{stop.reason}"
    text = tr(lang, key, **values)
    return f'<div class="phase draft-stop" data-phase="draft" data-stop="{stop.reason}">{text}</div>'
