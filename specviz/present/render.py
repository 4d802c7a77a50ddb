"""HTML and Markdown from traces and metrics: the step card, the generated text, counters, narration.

Plain strings only (no gradio, no plotly), so the app, the benchmark and tests all render the same.
Every verdict has a shape as well as a colour (underline style, strike-through, symbol), and
every colour used for text or a bar keeps at least 3:1 contrast on white (4.5:1 for text).
"""
from __future__ import annotations

import html
from dataclasses import dataclass

from ..core.metrics import MIN_TIMED
from ..core.notation import letters, num, show
from ..core.trace import PositionTrace, StepTrace
from . import tree_card
from .palette import ACCEPT_COLOUR, BONUS_COLOUR, DRAFT_COLOUR, FINAL_COLOUR, MUTED, REJECT_COLOUR, TARGET_COLOUR

VERDICT_STYLE = {  # symbol, colour, underline: the underline's style survives greyscale and colour blindness
    "accepted": ("✓", ACCEPT_COLOUR, "border-bottom:3px solid"),
    "rejected": ("✗", REJECT_COLOUR, "text-decoration:line-through; border-bottom:3px dotted"),
    "resampled": ("↻", FINAL_COLOUR, "border-bottom:3px dashed"),
    "bonus": ("★", BONUS_COLOUR, "border-bottom:5px double"),
}


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


def _threshold(u: float, chance: float) -> str:
    """The accept test on a [0, 1] track: accept zone up to the chance, the draw u as a black tick."""
    return (f'<span class="track" title="accept when u &lt; {num(chance)}" style="position:relative; display:inline-block; '
            f'width:110px; height:12px; vertical-align:middle; background:repeating-linear-gradient(45deg,#f3d3c4 0 3px,#fff 3px 6px); '
            f'border:1px solid {MUTED}"><span style="position:absolute; left:0; top:0; height:12px; width:{chance * 100:.1f}%; '
            f'background:{ACCEPT_COLOUR}"></span><span style="position:absolute; left:calc({u * 100:.1f}% - 2px); top:-3px; '
            f'width:4px; height:18px; background:#000"></span></span>')


def _verdict(pos: PositionTrace) -> str:
    symbol, colour, _ = VERDICT_STYLE["accepted" if pos.verdict == "accepted" else "rejected"]
    return f'<b style="color:{colour}; white-space:nowrap">{symbol} {pos.verdict}</b>'


def _verify_row(pos: PositionTrace, trace: StepTrace, t: str, d: str) -> str:
    token = f'<code>{_esc(pos.draft_text)}</code>'
    bars = (f'<span class=pair>{d} {_bar(pos.draft_prob, DRAFT_COLOUR)}</span> '
            f'<span class=pair>{t} {_bar(pos.target_prob, TARGET_COLOUR)}</span>')
    if trace.greedy:  # temperature 0: both are one-hot, the test is whether the argmaxes agree
        argmax = pos.candidates[0]
        test = (f'target argmax <code>{_esc(argmax.text)}</code>: '
                f'{"agrees" if argmax.id == pos.draft_token else "differs"}')
        return f'<tr><td>{pos.index + 1}</td><td>{token}</td><td colspan="2">{test}</td><td>{_verdict(pos)}</td></tr>'
    ratio = pos.target_prob / pos.draft_prob if pos.draft_prob > 0 else float("inf")
    cmp = "&lt;" if pos.verdict == "accepted" else "≥"
    chance = (f'mentored {num(pos.accept_prob)} <span class="muted">· exact {num(pos.exact_accept_prob)} · '
              f'KL {pos.kl_spent:.2f}/{trace.kl_budget:g}</span>' if trace.kl_budget > 0
              else f'min(1, {t}/{d}) = {num(pos.accept_prob)}')
    test = f'{_threshold(pos.uniform, pos.accept_prob)} u = {num(pos.uniform)} {cmp} {chance}'
    return (f'<tr><td>{pos.index + 1}</td><td>{token}</td><td>{bars}</td><td class=ratio>{t}/{d} = {ratio:.2f}</td>'
            f'<td>{test}</td><td>{_verdict(pos)}</td></tr>')


def _correction(trace: StepTrace, t: str, d: str) -> str:
    c = trace.correction
    lossy = trace.kl_budget > 0
    if c.kind == "bonus":
        head = (f'all {trace.gamma} drafts accepted, so the target pass already holds the next distribution {t}: '
                f'<b>bonus</b> token <code>{_esc(c.text)}</code> for free.')
        source = f"{t}"
    else:
        source = "mentored s" if lossy else f"norm(max(0, {t} − {d}))"
        why = (", the mentored resampling distribution" if lossy else
               ": at temperature 0 that is the target's argmax" if trace.greedy else
               ", the residual: the mass the target wants beyond what the draft gave")
        head = f'position {c.position + 1} was rejected: <b>resampled</b> <code>{_esc(c.text)}</code> from {source}{why}.'
    top = [x for x in sorted(c.candidates, key=lambda x: -x.final_prob)[:4] if x.final_prob > 0 or x.id == c.token]
    if all(x.id != c.token for x in top):
        top = top[:3] + [x for x in c.candidates if x.id == c.token]
    exact = {x.id: r for x, r in zip(c.candidates, c.residual_probs)} if lossy and c.kind == "resampled" else {}
    colour = FINAL_COLOUR if c.kind == "resampled" else BONUS_COLOUR
    options = " ".join(
        f'<span class="option{" chosen" if x.id == c.token else ""}"><code>{_esc(x.text)}</code> {_bar(x.final_prob, colour, 40)}'
        + (f' <span class="muted">exact {num(exact.get(x.id, 0.0))}</span>' if exact else "")
        + ("◀" if x.id == c.token else "") + "</span>"
        for x in top)
    return (f'<div class="phase"><b>3. Correct</b> — {head}</div>'
            f'<div class="options">top of {source}: {options}</div>')


def step_card(trace: StepTrace | None, notation: str = "leviathan", total_steps: int = 0) -> str:
    """One round, draft → verify → correct, compact enough for one 1280x720 screen at gamma <= 8."""
    if trace is None:
        return ('<div class="card empty">Press <b>Step</b> (or the <kbd>s</kbd> key) to run one round: the draft '
                'proposes γ tokens, the target checks them all in one pass, and one token is corrected or added.</div>')
    if getattr(trace, "tree", None) is not None:  # several drafts: the tree card (present/tree_card.py)
        return tree_card.tree_step_card(trace, notation, total_steps)
    t, d = letters(notation)
    mode = ('<span class="badge lossy">LOSSY: mentored decoding, KL budget '
            f'{trace.kl_budget:g}</span>' if trace.kl_budget > 0 else
            '<span class="badge">greedy (T = 0)</span>' if trace.greedy else '<span class="badge">exact</span>')
    viewing = f' (viewing; latest is {total_steps})' if total_steps and trace.step != total_steps else ""
    drafted = " ".join(f'<code>{_esc(p.draft_text)}</code>' for p in trace.positions)
    examined = [p for p in trace.positions if p.uniform is not None]
    skipped = [p for p in trace.positions if p.uniform is None]
    rule = "argmax test" if trace.greedy else "accept if u &lt; accept chance"
    head_cells = (f"<th>#</th><th>drafted</th><th colspan=2>{rule}</th><th>verdict</th>" if trace.greedy else
                  f"<th>#</th><th>drafted</th><th>{d}(x), {t}(x)</th><th class=ratio>ratio</th><th>{rule}</th><th>verdict</th>")
    rows = "".join(_verify_row(p, trace, t, d) for p in examined)
    if skipped:
        span = f"{skipped[0].index + 1}" + (f"–{skipped[-1].index + 1}" if len(skipped) > 1 else "")
        rows += (f'<tr class="muted"><td colspan="6">position{"s" if len(skipped) > 1 else ""} {span} '
                 f'({" ".join(_esc(p.draft_text) for p in skipped)}): not examined, an earlier draft was rejected</td></tr>')
    return (f'<div class="card"><div class="card-head"><b>Step {trace.step}</b>{viewing} · γ = {trace.gamma} {mode} · '
            f'{len(trace.emitted)} token{"s" if len(trace.emitted) != 1 else ""} from one target pass</div>'
            f'<div class="phase"><b>1. Draft</b> — the draft sampled {trace.gamma}: {drafted}</div>'
            f'<div class="phase"><b>2. Verify</b> — one target pass scored them all</div>'
            f'<table class="verify"><tr>{head_cells}</tr>{rows}</table>{_correction(trace, t, d)}</div>')


def narration(trace: StepTrace | None, notation: str = "leviathan") -> str:
    """A plain-language account of the step, in the algorithm's order (Markdown)."""
    if trace is None:
        return "*Nothing yet: press **Step**.*"
    if getattr(trace, "tree", None) is not None:
        return tree_card.tree_narration(trace, notation)
    t, d = letters(notation)
    drafted = ", ".join(f"“{show(p.draft_text)}” ({d} = {num(p.draft_prob)})" for p in trace.positions)
    lines = [f"#### Step {trace.step}", f"**1. Draft:** the draft model proposed {trace.gamma} tokens: {drafted}.",
             "", "**2. Verify:** the target scored all of them in one forward pass."]
    for p in trace.positions:
        if p.uniform is None:
            lines.append(f"- “{show(p.draft_text)}”: not examined, an earlier token was rejected.")
        elif trace.greedy:
            argmax = p.candidates[0]
            lines.append(f"- “{show(p.draft_text)}”: at temperature 0 both models are certain of their argmax; the "
                         f"target's argmax is “{show(argmax.text)}”, so the argmaxes "
                         f"{'agree' if argmax.id == p.draft_token else 'differ'}: **{p.verdict}**.")
        else:
            cmp = "<" if p.verdict == "accepted" else "≥"
            chance = (f"the mentored accept chance {num(p.accept_prob)} (exact decoding: min(1, {t}/{d}) = "
                      f"{num(p.exact_accept_prob)}; KL spent here {p.kl_spent:.3f} of the {trace.kl_budget:g} budget)"
                      if trace.kl_budget > 0 else f"min(1, {t}/{d}) = {num(p.accept_prob)}")
            lines.append(f"- “{show(p.draft_text)}”: the draft gave {d} = {num(p.draft_prob)}, the target gives {t} = "
                         f"{num(p.target_prob)}; the uniform draw u = {num(p.uniform)} {cmp} {chance}: **{p.verdict}**.")
    c = trace.correction
    lines.append("")
    if c.kind == "resampled" and trace.kl_budget > 0:
        lines.append(f"**3. Correct:** position {c.position + 1} was rejected, so “{show(c.text)}” was drawn from "
                     f"mentored decoding's resampling distribution s, which leans towards tokens the target rates far "
                     f"above the draft, instead of the exact residual norm(max(0, {t} − {d})).")
    elif c.kind == "resampled":
        lines.append(f"**3. Correct:** position {c.position + 1} was rejected, so a replacement “{show(c.text)}” "
                     f"was drawn from the residual norm(max(0, {t} − {d})), which puts mass only where the target "
                     f"wants more than the draft gave.")
    else:
        lines.append(f"**3. Correct:** every drafted token was accepted, so the target's distribution at the next "
                     f"position (already computed) gave a bonus token “{show(c.text)}” for free.")
    lines.append(f"\nThis step emitted **{len(trace.emitted)} token(s) for one target forward pass** "
                 f"({trace.n_accepted} accepted + 1 {c.kind}).")
    if trace.kl_budget > 0:
        lines.append(f"\n*Mentored decoding (KL budget {trace.kl_budget:g} nats): lossy, the output may differ "
                     f"from the target's distribution by up to that KL at each position.*")
    if trace.notice:
        lines.append(f"\n*Note: {trace.notice}.*")
    return "\n".join(lines)


def token_span(text: str, verdict: str, step: int | None) -> str:
    """One token of the generated text; step=None makes a legend sample (not clickable)."""
    symbol, colour, underline = VERDICT_STYLE[verdict]
    attrs = (f'class="chip {verdict}" data-verdict="{verdict}" data-step="{step}" tabindex="0" role="button" '
             f'title="step {step}: {verdict} (Enter shows the step)"' if step is not None
             else f'class="legend-chip" title="{verdict}"')
    shown = html.escape(text.replace(" ", "\u00a0") if text.strip() == "" and "\n" not in text else text) or "∅"
    return f'<span {attrs} style="{underline} {colour}; cursor:pointer">{shown}</span>'


def text_view(prompt: str, traces: list[StepTrace], selected: int | None = None) -> str:
    """The generated text as text: newlines break, each token marked by its verdict; rejected drafts
    carry the class "rejected" so a toggle can hide them without reflowing the rest."""
    parts = [f'<span class="prompt">{html.escape(prompt)}</span>']
    for tr in traces:
        inner = [token_span(e.text, e.kind, tr.step) for e in tr.emitted[: tr.n_accepted]]
        inner += [token_span(r.text, "rejected", tr.step) for r in tr.rejected]
        inner += [token_span(e.text, e.kind, tr.step) for e in tr.emitted[tr.n_accepted:]]
        mark = ' selected' if tr.step == selected else ''
        parts.append(f'<span class="step-group{mark}" data-step="{tr.step}">{"".join(inner)}</span>')
    legend = " ".join(f"{token_span(k, k, None)}" for k in VERDICT_STYLE)
    return (f'<div class="text-view">{"".join(parts)}</div>'
            f'<div class="legend">{legend} · click or Tab + Enter on a token to see its step</div>')


def counters_html(m: dict, device: str, lossy: bool, baseline_tokens: int, steps: int) -> str:
    """Speculative vs target-only, from metrics.metrics(); timings flagged while warming up."""
    if not steps:
        return '<div class="counters muted">Counters appear after the first step.</div>'
    badge = ' <span class="badge lossy">LOSSY run vs an exact baseline</span>' if lossy else ""
    if m["speedup"] is None or m["warming_up"]:
        speed = (f'<b>speedup</b>: warming up (timings count once both sides have {MIN_TIMED} forwards; '
                 f'now {steps} steps)')
    else:
        speed = (f'<b>speedup ×{m["speedup"]:.2f} ± {m["speedup_stderr"]:.2f}</b> measured here ({device}); '
                 f'Thm 3.8 predicts ×{m["predicted_speedup_thm38"]:.2f} for α = {m["acceptance_rate"]:.2f}, '
                 f'c = {m["cost_ratio_c"]:.2f}; best γ {m["best_gamma"]}')
    rate = (lambda k: f'{m[k]:.0f}' if m[k] else "—")
    rows = [("tokens", m["tokens"], baseline_tokens), ("target passes", m["target_calls"], baseline_tokens),
            ("draft passes", m["draft_calls"], "—"),
            ("tokens / s", rate("tokens_per_s_speculative"), rate("tokens_per_s_target_only"))]
    body = "".join(f"<tr><td>{a}</td><td><b>{b}</b></td><td>{c}</td></tr>" for a, b, c in rows)
    return (f'<div class="counters"><table><tr><th></th><th>speculative</th><th>target only</th></tr>{body}</table>'
            f'<div>α (accepted / tested) <b>{m["acceptance_rate"]:.2f}</b> · mean acceptance length '
            f'<b>{m["mean_acceptance_length"]:.2f}</b>{badge}</div><div>{speed}</div></div>')


METRIC_ROWS = [  # (key, name, one-line definition, format)
    ("acceptance_rate", "acceptance rate α (Leviathan)", "accepted / tested drafts (a draft after a rejection is never tested)", "{:.3f}"),
    ("draft_acceptance_rate", "draft acceptance rate (vLLM)", "accepted / drafted, untested drafts included", "{:.3f}"),
    ("mean_acceptance_length", "mean acceptance length (vLLM)", "tokens per step, the resampled or bonus token included", "{:.2f}"),
    ("system_efficiency", "system efficiency (vLLM)", "mean over steps of tokens emitted / (γ + 1)", "{:.3f}"),
    ("tokens_per_target_call", "tokens per target pass", "measured; Eq. 1 expects (1 − α^(γ+1)) / (1 − α)", "{:.2f}"),
    ("expected_tokens_per_target_call", "… expected from α (Eq. 1)", "what independent acceptances at α would give", "{:.2f}"),
]


def analytics_html(m: dict) -> str:
    """The metric set under the names vLLM and Leviathan et al. use, each with its definition."""
    if not m.get("steps"):
        return '<div class="muted">The metrics appear after the first step.</div>'
    rows = "".join(f"<tr><td>{name}</td><td><b>{fmt.format(m[key])}</b></td><td class=muted>{html.escape(text)}</td></tr>"
                   for key, name, text, fmt in METRIC_ROWS)
    per_position = ", ".join(f"{x:.2f}" for x in m["per_position_acceptance"])
    histogram = ", ".join(f"{k}: {n}" for k, n in enumerate(m["acceptance_length_histogram"]))
    rows += (f"<tr><td>per-position acceptance (vLLM)</td><td><b>{per_position}</b></td>"
             f"<td class=muted>share of steps that accepted drafted position 1, 2, …</td></tr>"
             f"<tr><td>acceptance-length histogram</td><td><b>{histogram}</b></td>"
             f"<td class=muted>steps by number of drafts accepted</td></tr>") + tree_card.tree_metric_rows(m)
    return f'<table class="analytics">{rows}</table>'


def most_rejected_html(ranked: list[dict]) -> str:
    """export.most_rejected's tokens: only those tested often enough for their rate to mean something."""
    from ..core.rejections import MIN_SUPPORT

    if not ranked:
        return f'<div class="muted">No token tested at least {MIN_SUPPORT} times has been rejected yet.</div>'
    items = "".join(f"<li><code>{_esc(show(t['token']))}</code>: rejected {t['rejected']} of {t['n']} times tested "
                    f"(95% interval {t['ci_low']:.2f}–{t['ci_high']:.2f})</li>" for t in ranked)
    return (f"<b>Draft tokens rejected most often</b> <span class=muted>(tokens tested at least {MIN_SUPPORT} times)"
            f"</span><ol>{items}</ol>")
