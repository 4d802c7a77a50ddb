"""HTML and Markdown from traces and metrics: the step card, the generated text, counters, narration.

Plain strings only (no gradio, no plotly), so the app, the benchmark and tests all render the same.
Every verdict has a shape as well as a colour (underline style, strike-through, symbol), and
every colour used for text or a bar keeps at least 3:1 contrast on white (4.5:1 for text).

The step card, the round summary and the narration tell the same round in the same order and share its
helpers; the tree card (several drafts) lives in tree_card.py, the run's counters and analytics in counters.py.
"""
from __future__ import annotations

import html
import math
from dataclasses import dataclass

from ..core.answer_key import mode
from ..core.notation import letters, num, show
from ..core.trace import PositionTrace, StepTrace
from . import tree_card
from .counters import METRIC_ROWS, analytics_html, counters_html, metric_row, most_rejected_html
from .draft_sources import stop_note, view_for, view_of
from .i18n import tr
from .palette import ACCEPT_COLOUR, BONUS_COLOUR, FINAL_COLOUR, REJECT_COLOUR, TARGET_COLOUR, var
from .parts import NOTHING_HIDDEN, part

__all__ = ["METRIC_ROWS", "ROLE", "VERDICT_STYLE", "Status", "analytics_html", "counters_html", "decisive",
           "message_html", "metric_row", "most_rejected_html", "narration", "round_summary", "step_card", "text_view",
           "token_span"]

VERDICT_STYLE = {  # symbol, colour, underline: the underline's style survives greyscale and colour blindness
    "accepted": ("✓", ACCEPT_COLOUR, "border-bottom:3px solid"),
    "rejected": ("✗", REJECT_COLOUR, "text-decoration:line-through; border-bottom:3px dotted"),
    "resampled": ("↻", FINAL_COLOUR, "border-bottom:3px dashed"),
    "bonus": ("★", BONUS_COLOUR, "border-bottom:5px double"),
}
ROLE = {"accepted": "accept", "rejected": "reject", "resampled": "final", "bonus": "bonus"}  # palette.var roles


@dataclass(frozen=True)
class Status:
    """A message for the user: "" (none), "info" or "error". Travels as data; rendered once."""
    kind: str = ""
    text: str = ""

    @property
    def error(self) -> bool:
        return self.kind == "error"


def message_html(status: Status) -> str:
    if not status.text:
        return ""
    colour = REJECT_COLOUR if status.error else TARGET_COLOUR
    return (f'<div class="message-{status.kind}" role="status" style="border-left:4px solid {colour}; '
            f'padding:2px 10px">{html.escape(status.text)}</div>')


def _esc(text: str) -> str:
    return html.escape(show(text))


def _bar(value: float, colour: str, width_px: int = 60) -> str:
    """A horizontal bar on a fixed [0, 1] axis with its value printed beside it."""
    fill = min(max(value, 0.0), 1.0) * 100  # a share of the track, so a narrower track (phones) keeps it inside
    return (f'<span class="bar" style="display:inline-block; width:{width_px}px; height:10px; background:#e8e8e8; '
            f'vertical-align:middle"><span style="display:block; width:{fill:.1f}%; height:10px; background:{colour}">'
            f'</span></span> <span class="num">{num(value)}</span>')


LOG_FLOOR = 1e-3   # the q/p bars' log axis runs from 0.001 to 1, like the full-distribution figures


def decisive(u: float, chance: float) -> tuple[str, str]:
    """u and the accept chance printed so the comparison the card states is true of the printed digits:
    never "u = 1.00 < 1.00". Starts from `num`; adds decimals until the printed values order as the true ones."""
    a, b = num(u), num(chance)
    digits = 2
    while u != chance and (float(a) == float(b) or (float(a) < float(b)) != (u < chance)) and digits < 20:
        digits += 1
        a, b = f"{u:.{digits}f}", f"{chance:.{digits}f}"
    return a, b


def _log_bar(value: float, role: str, width_px: int = 60) -> str:
    """A bar on a log axis from 0.001 to 1 (gridlines at 0.01 and 0.1) with its value printed beside it:
    0.01 fills a third of the track, so a typical drafted token is a visible bar, not a sliver."""
    share = 0.0 if value <= 0 else min(max((math.log10(max(value, LOG_FLOOR)) + 3) / 3, 0.0), 1.0)
    fill = max(share * 100, 1.5 if value > 0 else 0.0)
    return (f'<span class="bar logbar" style="width:{width_px}px; background:linear-gradient(90deg, transparent calc(33.3% - 1px), '
            f'{var("track-edge")} calc(33.3% - 1px) 33.3%, transparent 33.3% calc(66.7% - 1px), {var("track-edge")} '
            f'calc(66.7% - 1px) 66.7%, transparent 66.7%), {var("track")}"><span style="width:{fill:.1f}%; '
            f'background:{var(role)}"></span></span> <span class="num">{num(value)}</span>')


def _threshold(u: float, chance: float, lang: str = "en") -> str:
    """The accept test on a linear [0, 1] track: accept zone up to the chance, the draw u as a tick."""
    return (f'<span class="track" title="{tr(lang, "track.title", chance=num(chance))}" style="background:repeating-linear-gradient('
            f'45deg,{var("zone-off")} 0 3px,{var("zone-off-bg")} 3px 6px); border:1px solid {var("track-edge")}">'
            f'<span class="zone" style="width:{chance * 100:.1f}%; background:{var("zone")}"></span>'
            f'<span class="tick" style="left:calc({u * 100:.1f}% - 2px); background:{var("tick")}; '
            f'box-shadow:0 0 0 1px {var("zone-off-bg")}"></span></span>')


def _verdict(pos: PositionTrace, lang: str = "en") -> str:
    key = "accepted" if pos.verdict == "accepted" else "rejected"
    symbol, _, _ = VERDICT_STYLE[key]
    return f'<b style="color:{var("accept" if key == "accepted" else "reject")}; white-space:nowrap">{symbol} {tr(lang, "verdict." + key)}</b>'


def _exact_differs(pos: PositionTrace) -> bool | None:
    """Mentored rows: would exact decoding, with the same u, have decided otherwise? (None: not examined)."""
    if pos.uniform is None:
        return None
    return (pos.uniform < pos.exact_accept_prob) != (pos.verdict == "accepted")


def _verify_row(pos: PositionTrace, trace: StepTrace, t: str, d: str, lang: str = "en",
                hidden: frozenset = NOTHING_HIDDEN) -> str:
    token = f'<code>{_esc(pos.draft_text)}</code>'
    bars = (f'<span class=pair><span class=letter>{d}</span> {_log_bar(pos.draft_prob, "draft")}</span> '
            f'<span class=pair><span class=letter>{t}</span> {_log_bar(pos.target_prob, "target")}</span>')
    i = pos.index
    row = f'<tr{part(f"row{i}", hidden, "loop", "verify-row")} data-phase="verify">'
    decided = f'<td{part(f"row{i}.test", hidden, "test")}>{_verdict(pos, lang)}</td>'  # the verdict cell
    if trace.greedy:  # temperature 0: both are one-hot, the test is whether the argmaxes agree
        argmax = pos.candidates[0]
        test = tr(lang, "greedy.test", token=f"<code>{_esc(argmax.text)}</code>",
                  agrees=tr(lang, "greedy.agrees" if argmax.id == pos.draft_token else "greedy.differs"))
        return (f'{row}<td>{i + 1}</td><td>{token}</td><td colspan="2"{part(f"row{i}.test", hidden, "test")}>{test}'
                f'</td>{decided}</tr>')
    ratio = pos.target_prob / pos.draft_prob if pos.draft_prob > 0 else float("inf")
    cmp = "&lt;" if pos.verdict == "accepted" else "≥"
    u, chance_text = decisive(pos.uniform, pos.accept_prob)
    if trace.kl_budget > 0:
        _, exact_text = decisive(pos.uniform, pos.exact_accept_prob)
        chance = (f'mentored {chance_text} <span class="muted">'
                  f'{tr(lang, "mentored.rest", e=exact_text, kl=f"{pos.kl_spent:.2f}", budget=f"{trace.kl_budget:g}")}</span>')
        if _exact_differs(pos):
            key = "mentored.exact_rejects" if pos.verdict == "accepted" else "mentored.exact_accepts"
            chance += f' <b class="exact-would">⚠ {tr(lang, key)}</b>'
    else:  # the drafter's formula: min(1, p/q), or p(x) itself where q is one-hot (prompt lookup)
        chance = view_of(trace).chance_name(t, d, lang) + chance_text
    test = f'{_threshold(pos.uniform, pos.accept_prob, lang)} <span class="test">u = {u} {cmp} {chance}</span>'
    return (f'{row}<td>{i + 1}</td><td>{token}</td><td>{bars}</td><td{part(f"row{i}.ratio", hidden, "test", "ratio")}>'
            f'{t}/{d} = {ratio:.2f}</td><td{part(f"row{i}.test", hidden, "test")}>{test}</td>{decided}</tr>')


def _correction(trace: StepTrace, t: str, d: str, lang: str = "en", hidden: frozenset = NOTHING_HIDDEN) -> str:
    c = trace.correction
    lossy = trace.kl_budget > 0
    token = f"<code>{_esc(c.text)}</code>"
    if not trace.positions:  # nothing was proposed (a lookup with no match): a plain target pass, nothing accepted
        head = tr(lang, "correct.lookup_none", t=t, token=token)
        source = f"{t}"
    elif c.kind == "bonus":
        head = tr(lang, "correct.bonus", g=trace.gamma, t=t, token=token)
        source = f"{t}"
    else:
        source = tr(lang, "source.mentored") if lossy else f"norm(max(0, {t} − {d}))"
        why = (tr(lang, "why.mentored" if lossy else "why.greedy", t=t, d=d) if lossy or trace.greedy
               else view_of(trace).why_residual(t, d, lang))
        head = tr(lang, "correct.resampled", pos=c.position + 1, token=token, source=source, why=why)
    top = [x for x in sorted(c.candidates, key=lambda x: -x.final_prob)[:4] if x.final_prob > 0 or x.id == c.token]
    if all(x.id != c.token for x in top):
        top = top[:3] + [x for x in c.candidates if x.id == c.token]
    exact = {x.id: r for x, r in zip(c.candidates, c.residual_probs)} if lossy and c.kind == "resampled" else {}
    role = "final" if c.kind == "resampled" else "bonus"
    options = " ".join(
        f'<span class="option{" chosen" if x.id == c.token else ""}"><code>{_esc(x.text)}</code> {_log_bar(x.final_prob, role, 40)}'
        + (f' <span class="muted">{tr(lang, "exact_prob", x=num(exact.get(x.id, 0.0)))}</span>' if exact else "")
        + ("◀" if x.id == c.token else "") + "</span>"
        for x in top)
    line = "bonus" if c.kind == "bonus" else "reject"
    return (f'<div{part("correct", hidden, line, "phase")} data-phase="correct">{head}</div>'
            f'<div{part("correct", hidden, line, "options")} data-phase="correct">{tr(lang, "top_of", source=source)} '
            f'{options}</div>')


def step_card(trace: StepTrace | None, notation: str = "leviathan", total_steps: int = 0, lang: str = "en",
              hidden: frozenset = NOTHING_HIDDEN) -> str:
    """One round, draft → verify → correct, compact enough for one 1280x720 screen at gamma <= 8.
    Parts carry data-phase (draft, verify, correct) so the page can reveal them one at a time, and data-part
    (`answer_key.card_parts`): those in `hidden` are drawn hidden, keeping their place (predict mode)."""
    if trace is None:
        return f'<div class="card empty">{tr(lang, "card.empty")}</div>'
    if getattr(trace, "tree", None) is not None:  # several drafts: the tree card (present/tree_card.py)
        return tree_card.tree_step_card(trace, notation, total_steps, lang, hidden)
    t, d = letters(notation)
    badge = (f'<span class="badge lossy">{tr(lang, "badge.lossy", kl=f"{trace.kl_budget:g}")}</span>' if trace.kl_budget > 0
            else f'<span class="badge">{tr(lang, "badge.greedy")}</span>' if trace.greedy
            else f'<span class="badge">{tr(lang, "badge.exact")}</span>')
    viewing = tr(lang, "card.viewing", total=total_steps) if total_steps and trace.step != total_steps else ""
    drafted = " ".join(f'<code>{_esc(p.draft_text)}</code>' for p in trace.positions)
    examined = [p for p in trace.positions if p.uniform is not None]
    skipped = [p for p in trace.positions if p.uniform is None]
    rule = tr(lang, "col.rule_greedy" if trace.greedy else "col.rule_mentored" if trace.kl_budget > 0 else "col.rule", t=t, d=d)
    head_cells = (f"<th>#</th><th>{tr(lang, 'col.drafted')}</th><th colspan=2>{rule}</th><th>{tr(lang, 'col.verdict')}</th>"
                  if trace.greedy else
                  f"<th>#</th><th>{tr(lang, 'col.drafted')}</th><th>{tr(lang, 'col.bars', t=t, d=d)}</th>"
                  f"<th class=ratio>{tr(lang, 'col.ratio')}</th><th>{rule}</th><th>{tr(lang, 'col.verdict')}</th>")
    rows = "".join(_verify_row(p, trace, t, d, lang, hidden) for p in examined)
    if skipped:
        span = f"{skipped[0].index + 1}" + (f"–{skipped[-1].index + 1}" if len(skipped) > 1 else "")
        # the row that says the loop stopped keeps the test's line: the else line (the residual) lights with
        # the correction, never before predict mode asks where the round's last token comes from
        rows += (f'<tr{part("skipped", hidden, "test", "muted")} data-phase="verify"><td colspan="6">'
                 f'{tr(lang, "skipped", span=span, tokens=" ".join(_esc(p.draft_text) for p in skipped))}</td></tr>')
    source = view_for(trace.source.kind)  # who drafted: the sentences that differ between drafters
    reads = source.draft_note(trace, d, lang) + stop_note(trace, lang)
    verify = tr(lang, "card.verify_greedy" if trace.greedy else "card.verify_mentored" if trace.kl_budget > 0
                else "card.verify", t=t, d=d)
    verify_part = (f'<div{part("verify", hidden, "verify", "phase")} data-phase="verify">{verify}</div>'
                   f'<div{part("verify", hidden, "verify", "table-scroll")} data-phase="verify">'
                   f'<table class="verify"><tr>{head_cells}</tr>{rows}</table></div>') if trace.positions else ""
    yielded = f'<span{part("end", hidden)}>· {tr(lang, "card.tokens_from_pass", k=len(trace.emitted))}</span>'
    return (f'<div class="card" data-step="{trace.step}" data-algo="{mode(trace)}"><div class="card-head">'
            f'<b>{tr(lang, "card.step", n=trace.step)}</b>{viewing} · γ = {trace.gamma}{_auto(trace, lang)} {badge} {yielded}</div>'
            f'<div{part("draft", hidden, "draft", "phase")} data-phase="draft">{source.draft_line(trace, drafted, t, d, lang)}</div>'
            f'{reads}{verify_part}{_correction(trace, t, d, lang, hidden)}</div>')


def _auto(trace: StepTrace, lang: str) -> str:
    """' (auto, at most 8)' after γ where the round's length adapted (core.draft_length); '' for a fixed gamma."""
    return tr(lang, "card.gamma_auto", cap=trace.draft_stop.gamma_max) if trace.draft_stop else ""


def round_summary(trace: StepTrace | None, notation: str = "leviathan", lang: str = "en") -> str:
    """One sentence of what the round did, e.g. "drafted 4, kept 1; resampled 'We' from the residual:
    2 tokens from 1 target pass" (with its T = 0 and mentored forms)."""
    if trace is None:
        return f'<div class="round-summary empty">{tr(lang, "sum.empty")}</div>'
    c = trace.correction
    token = f"<code>{_esc(c.text)}</code>"
    kept = (view_for(trace.source.kind).nothing_proposed(trace, lang) if not trace.positions
            else tr(lang, "sum.kept_all", n=trace.step, g=trace.gamma) if trace.n_accepted == trace.gamma
            else tr(lang, "sum.kept", n=trace.step, g=trace.gamma, k=trace.n_accepted))
    cut = trace.emitted and len(trace.emitted) < trace.n_accepted + 1  # an accepted end-of-text (or the budget) cut it
    if cut and trace.emitted[-1].kind == "accepted":
        how = tr(lang, "sum.ended", token=f"<code>{_esc(trace.emitted[-1].text)}</code>")
    elif c.kind == "bonus":
        how = tr(lang, "sum.bonus", token=token)
    elif trace.greedy:
        how = tr(lang, "sum.resampled_greedy", token=token, pos=c.position + 1)
    elif trace.kl_budget > 0:
        how = tr(lang, "sum.resampled_mentored", token=token)
    else:
        how = tr(lang, "sum.resampled", token=token)
    semi, colon, period = tr(lang, "p.semicolon"), tr(lang, "p.colon"), tr(lang, "p.period")
    sentence = f'{kept}{semi}{how}{colon}<b>{tr(lang, "sum.result", k=len(trace.emitted))}</b>'
    if trace.kl_budget > 0:
        where = [str(p.index + 1) for p in trace.positions if _exact_differs(p)]
        sentence += f' <span class="badge lossy">{tr(lang, "sum.lossy")}</span>'
        if where:
            sentence += f'{semi}{tr(lang, "sum.exact_would", where=", ".join(where))}'
    return f'<div class="round-summary" role="status" data-step="{trace.step}">{sentence}{period}</div>'


def narration(trace: StepTrace | None, notation: str = "leviathan", lang: str = "en") -> str:
    """A plain-language account of the step, in the algorithm's order (Markdown)."""
    if trace is None:
        return tr(lang, "nar.empty")
    if getattr(trace, "tree", None) is not None:
        return tree_card.tree_narration(trace, notation, lang)
    t, d = letters(notation)
    q = (lambda text: f"“{show(text)}”")
    drafted = ", ".join(f"{q(p.draft_text)} ({d} = {num(p.draft_prob)})" for p in trace.positions)
    draft = view_for(trace.source.kind).narration_line(trace, drafted, t, d, lang)
    lines = [f"#### {tr(lang, 'card.step', n=trace.step)}", draft, "", tr(lang, "nar.verify")]
    for p in trace.positions:
        verdict = tr(lang, "verdict.accepted" if p.verdict == "accepted" else "verdict.rejected")
        if p.uniform is None:
            lines.append(tr(lang, "nar.skipped", token=q(p.draft_text)))
        elif trace.greedy:
            argmax = p.candidates[0]
            lines.append(tr(lang, "nar.greedy", token=q(p.draft_text), argmax=q(argmax.text), verdict=verdict,
                            agree=tr(lang, "nar.agree" if argmax.id == p.draft_token else "nar.differ")))
        else:
            cmp = "<" if p.verdict == "accepted" else "≥"
            u, chance_text = decisive(p.uniform, p.accept_prob)
            chance = (tr(lang, "nar.mentored_chance", m=chance_text, t=t, d=d, e=decisive(p.uniform, p.exact_accept_prob)[1],
                         kl=f"{p.kl_spent:.3f}", budget=f"{trace.kl_budget:g}")
                      if trace.kl_budget > 0 else f"min(1, {t}/{d}) = {chance_text}")
            line = tr(lang, "nar.row", token=q(p.draft_text), d=d, t=t, q=num(p.draft_prob), p=num(p.target_prob),
                      u=u, cmp=cmp, chance=chance, verdict=verdict)
            if trace.kl_budget > 0 and _exact_differs(p):
                line += " ⚠ " + tr(lang, "mentored.exact_rejects" if p.verdict == "accepted" else "mentored.exact_accepts")
            lines.append(line)
    c = trace.correction
    lines.append("")
    token = q(c.text)
    if c.kind == "resampled" and trace.kl_budget > 0:
        lines.append(tr(lang, "nar.correct_mentored", pos=c.position + 1, token=token, t=t, d=d))
    elif c.kind == "resampled":
        lines.append(tr(lang, "nar.correct_resampled", pos=c.position + 1, token=token, t=t, d=d))
    else:
        lines.append(tr(lang, "nar.correct_bonus", token=token))
    lines.append("\n" + tr(lang, "nar.total", k=len(trace.emitted), a=trace.n_accepted, kind=tr(lang, f"kind.{c.kind}")))
    if trace.kl_budget > 0:
        lines.append("\n" + tr(lang, "nar.lossy", budget=f"{trace.kl_budget:g}"))
    if trace.notice:
        lines.append("\n" + tr(lang, "nar.note", note=trace.notice))
    return "\n".join(lines)


def token_span(text: str, verdict: str, step: int | None, lang: str = "en") -> str:
    """One token of the generated text; step=None makes a legend sample (not clickable)."""
    symbol, colour, underline = VERDICT_STYLE[verdict]
    name = tr(lang, f"verdict.{verdict}")
    attrs = (f'class="chip {verdict}" data-verdict="{verdict}" data-step="{step}" tabindex="0" role="button" '
             f'title="{html.escape(tr(lang, "chip.title", n=step, verdict=name))}"' if step is not None
             else f'class="legend-chip {verdict}" title="{html.escape(name)}"')
    shown = html.escape(text.replace(" ", "\u00a0") if text.strip() == "" and "\n" not in text else text) or "∅"
    return f'<span {attrs} style="{underline} {var(ROLE[verdict])}; cursor:pointer">{shown}</span>'


def text_view(prompt: str, traces: list[StepTrace], selected: int | None = None, lang: str = "en",
              hidden_step: int | None = None) -> str:
    """The generated text as text: newlines break, each token marked by its verdict; rejected drafts
    carry the class "rejected" so a toggle can hide them without reflowing the rest. The tokens of step
    `hidden_step` keep their place but are hidden (predict mode: a round's verdicts wait for its answers)."""
    parts = [f'<span class="prompt">{html.escape(prompt)}</span>']
    for t in traces:
        inner = [token_span(e.text, e.kind, t.step, lang) for e in t.emitted[: t.n_accepted]]
        inner += [token_span(r.text, "rejected", t.step, lang) for r in t.rejected]
        inner += [token_span(e.text, e.kind, t.step, lang) for e in t.emitted[t.n_accepted:]]
        mark = (' selected' if t.step == selected else '') + (' sv-hidden' if t.step == hidden_step else '')
        parts.append(f'<span class="step-group{mark}" data-step="{t.step}">{"".join(inner)}</span>')
    legend = " ".join(f"{token_span(tr(lang, f'verdict.{k}'), k, None, lang)}" for k in VERDICT_STYLE)
    return (f'<div class="text-view">{"".join(parts)}</div>'
            f'<div class="legend">{legend} · {tr(lang, "legend.hint")}</div>')
