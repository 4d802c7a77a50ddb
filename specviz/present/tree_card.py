"""The step card and narration of a step with several drafts (a token tree), from its `TreeTrace`.

Kept apart from render.py (the single-chain card): render.step_card and render.narration hand a step
over here when it carries a tree. Styles are inline, so the card needs nothing from page.css.
The card tells the round in the algorithm's order:
  1. Draft   the k chains as a grid, chains sorted so that a shared prefix is one merged cell (a node),
             each node with q and p; the accepted path highlighted, tried nodes numbered in order
  2. Verify  per depth, the candidates in the order tried: the current p(x) and q(x), u against
             min(1, p/q), the verdict; after each rejection, the residual the next one is judged against
  3. Correct the token drawn from the last residual (all rejected) or the bonus token
"""
from __future__ import annotations

import html

from ..core.notation import letters, num, show
from ..core.trace import StepTrace, TreeNode, TreeTry
from .i18n import tr
from .palette import ACCEPT_COLOUR, BONUS_COLOUR, FINAL_COLOUR, MUTED, REJECT_COLOUR
from .parts import part

RANKS = "①②③④⑤⑥⑦⑧"
CELL = "padding:0 4px; line-height:1.25;"  # compact cells: k <= 4, gamma <= 4 fit one 1280x720 screen
NODE_STYLE = {  # background, border, text decoration: a shape as well as a colour for each status
    "accepted": ("#e3f4ea", f"3px solid {ACCEPT_COLOUR}", ""),
    "rejected": ("#fbe7e1", f"2px dotted {REJECT_COLOUR}", "line-through"),
    "untried": ("#ffffff", f"1px dashed {MUTED}", ""),
    "unexamined": ("#f4f4f4", "1px solid #ddd", ""),
}


def _esc(text: str) -> str:
    return html.escape(show(text))


def _track(u: float, chance: float, lang: str) -> str:
    """u against the accept chance on [0, 1]: the accept zone filled, u a black tick (inline SVG)."""
    return (f'<svg width="90" height="12" role="img" aria-label="{tr(lang, "tree.track", u=num(u), a=num(chance))}" '
            f'style="display:inline-block; vertical-align:middle"><rect x="0" y="1" width="90" height="10" fill="#f6e1d8" stroke="{MUTED}"/>'
            f'<rect x="0" y="1" width="{90 * chance:.1f}" height="10" fill="{ACCEPT_COLOUR}"/>'
            f'<rect x="{max(0.0, 90 * u - 1.5):.1f}" y="0" width="3" height="12" fill="#000"/></svg>')


def _grid(trace: StepTrace, t: str, d: str, lang: str, concealed: bool = False) -> str:
    """Rows = chains (sorted so shared prefixes are adjacent), columns = depths; a node spans its chains.
    `concealed` (predict mode, before the verdicts): every node drawn alike, the order of tries left out, each
    border transparent at its own width, so nothing moves when the statuses appear."""
    tree = trace.tree
    by_depth: dict[int, list[TreeNode]] = {}
    for n in tree.nodes:
        by_depth.setdefault(n.depth, []).append(n)
    node_of = {(n.depth, c): n for n in tree.nodes for c in n.chains}
    order = sorted(range(tree.drafts), key=lambda c: [node_of[(dep, c)].token for dep in range(trace.gamma)])
    tried = {(x.node): x.rank for x in tree.tries}
    rows = []
    for r, chain in enumerate(order):
        cells = [f'<td class="muted" style="{CELL} font-size:80%">{tr(lang, "tree.chain", n=chain + 1)}</td>']
        for depth in range(trace.gamma):
            node = node_of[(depth, chain)]
            if r and node_of[(depth, order[r - 1])] is node:
                continue  # merged into the cell above: the same node
            span = 1
            while r + span < len(order) and node_of[(depth, order[r + span])] is node:
                span += 1
            bg, border, deco = NODE_STYLE[node.status]
            rank = (f'<sup title="{tr(lang, "tree.tried_n", n=tried[node.id] + 1)}">{RANKS[tried[node.id]]}</sup>'
                    if node.id in tried else "")
            status = node.status
            if concealed:
                bg, border, deco, status = "#f4f4f4", border.replace(border.split()[-1], "transparent"), "", "unexamined"
                rank = rank and '<sup style="visibility:hidden">①</sup>'

            share = f' <span class="muted">×{len(node.chains)}</span>' if len(node.chains) > 1 else ""
            cells.append(
                f'<td rowspan="{span}" class="node {status}" data-node="{node.id}" title="{tr(lang, f"tree.status.{status}")}" '
                f'style="{CELL} background:{bg}; border:{border}; white-space:nowrap">'
                f'<code style="text-decoration:{deco}">{_esc(node.text)}</code>{rank}{share} '
                f'<span style="font-size:80%">{d} {num(node.draft_prob)} · {t} {num(node.target_prob)}</span></td>')
        rows.append(f"<tr>{''.join(cells)}</tr>")
    head = "".join(f'<th style="{CELL}">{tr(lang, "tree.depth_n", n=i + 1)}</th>' for i in range(trace.gamma))
    return (f'<table class="tree-grid" style="border-collapse:separate; border-spacing:2px; margin:2px 0">'
            f'<tr><th style="{CELL}"></th>{head}</tr>{"".join(rows)}</table>')


def _residual_note(x: TreeTry, t: str, d: str, last: bool, lang: str) -> str:
    """After a rejection: how p changed (before → after on its top tokens), the next one's yardstick."""
    then = tr(lang, "tree.then_last" if last else "tree.then_next")
    moved = " ".join(f'<code>{_esc(c.text)}</code> {num(c.target_prob)}→<b>{num(c.final_prob)}</b>' for c in x.residual[:3])
    return (f'<tr class="residual"><td style="{CELL}"></td><td colspan="3" style="{CELL} font-size:85%; color:{FINAL_COLOUR}">'
            f'{tr(lang, "tree.residual", t=t, d=d, moved=moved, then=then)}</td></tr>')


def _try_row(x: TreeTry, trace: StepTrace, t: str, d: str, lang: str) -> str:
    last = not any(y.depth == x.depth and y.rank == x.rank + 1 for y in trace.tree.tries)
    colour = ACCEPT_COLOUR if x.verdict == "accepted" else REJECT_COLOUR
    verdict = f'<b style="color:{colour}; white-space:nowrap">{"✓" if x.verdict == "accepted" else "✗"} {tr(lang, f"verdict.{x.verdict}")}</b>'
    token = f'{RANKS[x.rank]} <code>{_esc(x.text)}</code> <span class="muted">{tr(lang, "tree.chain", n=x.chain + 1)}</span>'
    if trace.greedy:
        test = tr(lang, "tree.greedy_test")
    else:
        cmp = "&lt;" if x.verdict == "accepted" else "≥"
        current = tr(lang, "tree.current", t=t) if x.rank else t
        # two unbreakable halves: on a narrow card (the algorithm beside it) the test takes two lines, not the verdict
        test = (f'<span style="white-space:nowrap">{current}(x) {num(x.target_prob)}, {d}(x) {num(x.draft_prob)}</span> '
                f'<span style="white-space:nowrap">{_track(x.uniform, x.accept_prob, lang)} '
                f'u = {num(x.uniform)} {cmp} {num(x.accept_prob)}</span>')
    row = (f'<tr class="try {x.verdict}" data-depth="{x.depth}" data-rank="{x.rank}"><td style="{CELL}">{x.depth + 1}'
           f'</td><td style="{CELL} white-space:nowrap">{token}</td><td style="{CELL}">{test}</td>'
           f'<td style="{CELL}">{verdict}</td></tr>')
    return row + (_residual_note(x, t, d, last, lang) if x.verdict == "rejected" and x.residual and not trace.greedy else "")


def _correction(trace: StepTrace, t: str, lang: str, hidden: frozenset = frozenset()) -> str:
    c = trace.correction
    token = f"<code>{_esc(c.text)}</code>"
    if c.kind == "bonus":
        head = tr(lang, "tree.c_bonus", token=token, t=t)
        colour = BONUS_COLOUR
    else:
        n = sum(x.depth == c.position for x in trace.tree.tries)
        head = tr(lang, "tree.c_all" if n > 1 else "tree.c_only", n=n, depth=c.position + 1, token=token)
        colour = FINAL_COLOUR
    top = sorted(c.candidates, key=lambda x: -x.final_prob)[:4]
    if all(x.id != c.token for x in top):  # the drawn token is always shown
        top = top[:3] + [x for x in c.candidates if x.id == c.token]
    chosen = f' style="outline:2px solid {colour}; padding:0 2px"'
    options = " ".join(f'<span{chosen if x.id == c.token else ""}><code>{_esc(x.text)}</code> {num(x.final_prob)}'
                       f'{" ◀" if x.id == c.token else ""}</span>' for x in top)
    line = "bonus" if c.kind == "bonus" else "reject"
    return f'<div{part("correct", hidden, line, "phase")}>{tr(lang, "tree.c_phase", head=head, options=options)}</div>'


def round_summary(trace: StepTrace, lang: str = "en") -> str:
    """One sentence: how many candidates were tried where, and what the round emitted."""
    tree = trace.tree
    path = "".join(show(tree.nodes[i].text) for i in tree.path)
    kept = tr(lang, "tree.kept", path=path, a=trace.n_accepted, g=trace.gamma) if path else tr(lang, "tree.kept_none")
    return tr(lang, "tree.summary", k=tree.drafts, nodes=len(tree.nodes), tries=len(tree.tries), kept=kept,
              kind=tr(lang, f"kind.{trace.correction.kind}"), n=len(trace.emitted))


def tree_step_card(trace: StepTrace, notation: str = "leviathan", total_steps: int = 0, lang: str = "en",
                   hidden: frozenset = frozenset()) -> str:
    """The tree round's card; the parts named in `hidden` (`answer_key.card_parts`) are drawn hidden, keeping
    their place, and while "verify" is hidden the grid shows no verdict (predict mode)."""
    t, d = letters(notation)
    viewing = tr(lang, "card.viewing", total=total_steps) if total_steps and trace.step != total_steps else ""
    mode = tr(lang, "badge.greedy" if trace.greedy else "badge.exact")
    rows = "".join(_try_row(x, trace, t, d, lang) for x in trace.tree.tries)
    names = (tr(lang, "tree.col_depth"), tr(lang, "tree.col_tried"), tr(lang, "col.rule", t=t, d=d), tr(lang, "col.verdict"))
    head = "".join(f'<th style="{CELL}">{x}</th>' for x in names)
    return (f'<div class="card tree-card" data-drafts="{trace.drafts}" data-step="{trace.step}" data-algo="tree" '
            f'style="font-size:14px; line-height:1.3"><div class="card-head"><b>{tr(lang, "card.step", n=trace.step)}</b>'
            f'{viewing} · {tr(lang, "tree.head", g=trace.gamma, k=trace.drafts)} <span class="badge">{mode}</span> '
            f'<span{part("end", hidden)}>· {tr(lang, "card.tokens_from_pass", k=len(trace.emitted))}</span></div>'
            f'<div{part("end", hidden, cls="round-summary")} style="margin:2px 0">{html.escape(round_summary(trace, lang))}</div>'
            f'<div{part("draft", hidden, "draft", "phase")}>{tr(lang, "tree.draft", k=trace.drafts)}</div>'
            f'{_grid(trace, t, d, lang, concealed="verify" in hidden)}'
            f'<div{part("verify", hidden, "verify", "phase")}>{tr(lang, "tree.verify", t=t)}</div>'
            f'<table{part("verify", hidden, "test", "verify tree-tries")} style="margin:2px 0"><tr>{head}</tr>{rows}</table>'
            f'{_correction(trace, t, lang, hidden)}</div>')


def tree_narration(trace: StepTrace, notation: str = "leviathan", lang: str = "en") -> str:
    """The tree round in words, in the algorithm's order (Markdown, in `lang`)."""
    t, d = letters(notation)
    tree = trace.tree
    lines = [tr(lang, "tree.n_head", n=trace.step, k=tree.drafts),
             tr(lang, "tree.n_draft", k=tree.drafts, g=trace.gamma, nodes=len(tree.nodes)), "", tr(lang, "tree.n_verify")]
    for x in tree.tries:
        where = dict(depth=x.depth + 1, r=x.rank + 1, token=show(x.text), c=x.chain + 1,
                     verdict=tr(lang, f"verdict.{x.verdict}"))
        if trace.greedy:
            lines.append(tr(lang, "tree.n_greedy", **where))
            continue
        cmp = "<" if x.verdict == "accepted" else "≥"
        against = tr(lang, "tree.n_against", t=t, r=x.rank) if x.rank else t
        line = tr(lang, "tree.n_try", **where, d=d, t=t, q=num(x.draft_prob), against=against, p=num(x.target_prob),
                  u=num(x.uniform), cmp=cmp, a=num(x.accept_prob))
        if x.verdict == "rejected" and x.residual:
            moved = ", ".join(f"“{show(c.text)}” {num(c.target_prob)} → {num(c.final_prob)}" for c in x.residual[:3])
            line += tr(lang, "tree.n_residual", t=t, d=d, moved=moved)
        lines.append(line)
    c = trace.correction
    lines.append("")
    if c.kind == "bonus":
        lines.append(tr(lang, "tree.n_bonus", token=show(c.text)))
    else:
        lines.append(tr(lang, "tree.n_resampled", depth=c.position + 1, token=show(c.text)))
    lines.append("\n" + tr(lang, "tree.n_exact", summary=round_summary(trace, lang)))
    if trace.notice:
        lines.append("\n" + tr(lang, "nar.note", note=trace.notice))
    return "\n".join(lines)


def tree_metric_rows(m: dict, lang: str = "en") -> str:
    """Rows for the debugging metrics table: acceptance by depth and by sibling rank (several drafts)."""
    if m.get("drafts", 1) <= 1:
        return ""
    depth = ", ".join(f"{x:.2f}" for x in m["acceptance_by_depth"])
    rank = ", ".join(f"{x:.2f} ({n})" for x, n in zip(m["acceptance_by_rank"], m["tries_by_rank"]) if n)
    rows = [(tr(lang, "metric.by_depth", k=m["drafts"]), depth, tr(lang, "metric.by_depth.def")),
            (tr(lang, "metric.by_rank"), rank, tr(lang, "metric.by_rank.def"))]
    return "".join(f"<tr><td>{a}</td><td><b>{b}</b></td><td class=muted>{c}</td></tr>" for a, b, c in rows)
