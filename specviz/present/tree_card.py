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
from .palette import ACCEPT_COLOUR, BONUS_COLOUR, FINAL_COLOUR, MUTED, REJECT_COLOUR

RANKS = "①②③④⑤⑥⑦⑧"
CELL = "padding:0 4px; line-height:1.25;"  # compact cells: k <= 4, gamma <= 4 fit one 1280x720 screen
NODE_STYLE = {  # background, border, text decoration: a shape as well as a colour for each status
    "accepted": ("#e3f4ea", f"3px solid {ACCEPT_COLOUR}", ""),
    "rejected": ("#fbe7e1", f"2px dotted {REJECT_COLOUR}", "line-through"),
    "untried": ("#ffffff", f"1px dashed {MUTED}", ""),
    "unexamined": ("#f4f4f4", "1px solid #ddd", ""),
}
STATUS_WORDS = {"accepted": "accepted path", "rejected": "rejected", "untried": "not tried (a sibling was accepted first)",
                "unexamined": "not examined (its branch was not accepted)"}


def _esc(text: str) -> str:
    return html.escape(show(text))


def _track(u: float, chance: float) -> str:
    """u against the accept chance on [0, 1]: the accept zone filled, u a black tick (inline SVG)."""
    return (f'<svg width="90" height="12" role="img" aria-label="u {num(u)} against {num(chance)}" '
            f'style="display:inline-block; vertical-align:middle"><rect x="0" y="1" width="90" height="10" fill="#f6e1d8" stroke="{MUTED}"/>'
            f'<rect x="0" y="1" width="{90 * chance:.1f}" height="10" fill="{ACCEPT_COLOUR}"/>'
            f'<rect x="{max(0.0, 90 * u - 1.5):.1f}" y="0" width="3" height="12" fill="#000"/></svg>')


def _grid(trace: StepTrace, t: str, d: str) -> str:
    """Rows = chains (sorted so shared prefixes are adjacent), columns = depths; a node spans its chains."""
    tree = trace.tree
    by_depth: dict[int, list[TreeNode]] = {}
    for n in tree.nodes:
        by_depth.setdefault(n.depth, []).append(n)
    node_of = {(n.depth, c): n for n in tree.nodes for c in n.chains}
    order = sorted(range(tree.drafts), key=lambda c: [node_of[(dep, c)].token for dep in range(trace.gamma)])
    tried = {(x.node): x.rank for x in tree.tries}
    rows = []
    for r, chain in enumerate(order):
        cells = [f'<td class="muted" style="{CELL} font-size:80%">chain {chain + 1}</td>']
        for depth in range(trace.gamma):
            node = node_of[(depth, chain)]
            if r and node_of[(depth, order[r - 1])] is node:
                continue  # merged into the cell above: the same node
            span = 1
            while r + span < len(order) and node_of[(depth, order[r + span])] is node:
                span += 1
            bg, border, deco = NODE_STYLE[node.status]
            rank = f'<sup title="tried {tried[node.id] + 1}.">{RANKS[tried[node.id]]}</sup>' if node.id in tried else ""
            share = f' <span class="muted">×{len(node.chains)}</span>' if len(node.chains) > 1 else ""
            cells.append(
                f'<td rowspan="{span}" class="node {node.status}" data-node="{node.id}" title="{STATUS_WORDS[node.status]}" '
                f'style="{CELL} background:{bg}; border:{border}; white-space:nowrap">'
                f'<code style="text-decoration:{deco}">{_esc(node.text)}</code>{rank}{share} '
                f'<span style="font-size:80%">{d} {num(node.draft_prob)} · {t} {num(node.target_prob)}</span></td>')
        rows.append(f"<tr>{''.join(cells)}</tr>")
    head = "".join(f'<th style="{CELL}">depth {i + 1}</th>' for i in range(trace.gamma))
    return (f'<table class="tree-grid" style="border-collapse:separate; border-spacing:2px; margin:2px 0">'
            f'<tr><th style="{CELL}"></th>{head}</tr>{"".join(rows)}</table>')


def _residual_note(x: TreeTry, t: str, d: str, last: bool) -> str:
    """After a rejection: how p changed (before → after on its top tokens), the next one's yardstick."""
    then = "the correction is drawn from this" if last else "the next sibling is judged against this"
    moved = " ".join(f'<code>{_esc(c.text)}</code> {num(c.target_prob)}→<b>{num(c.final_prob)}</b>' for c in x.residual[:3])
    return (f'<tr class="residual"><td style="{CELL}"></td><td colspan="3" style="{CELL} font-size:85%; color:{FINAL_COLOUR}">↳ {t} becomes '
            f'norm(max(0, {t} − {d})): {moved} … {then}</td></tr>')


def _try_row(x: TreeTry, trace: StepTrace, t: str, d: str) -> str:
    last = not any(y.depth == x.depth and y.rank == x.rank + 1 for y in trace.tree.tries)
    colour = ACCEPT_COLOUR if x.verdict == "accepted" else REJECT_COLOUR
    verdict = f'<b style="color:{colour}; white-space:nowrap">{"✓" if x.verdict == "accepted" else "✗"} {x.verdict}</b>'
    token = f'{RANKS[x.rank]} <code>{_esc(x.text)}</code> <span class="muted">chain {x.chain + 1}</span>'
    if trace.greedy:
        test = "one-hot: kept only if it is the target's argmax"
    else:
        cmp = "&lt;" if x.verdict == "accepted" else "≥"
        current = f"current {t}" if x.rank else t
        test = (f'{current}(x) {num(x.target_prob)}, {d}(x) {num(x.draft_prob)} {_track(x.uniform, x.accept_prob)} '
                f'u = {num(x.uniform)} {cmp} {num(x.accept_prob)}')
    row = (f'<tr class="try {x.verdict}" data-depth="{x.depth}" data-rank="{x.rank}"><td style="{CELL}">{x.depth + 1}'
           f'</td><td style="{CELL} white-space:nowrap">{token}</td><td style="{CELL} white-space:nowrap">{test}</td>'
           f'<td style="{CELL}">{verdict}</td></tr>')
    return row + (_residual_note(x, t, d, last) if x.verdict == "rejected" and x.residual and not trace.greedy else "")


def _correction(trace: StepTrace, t: str) -> str:
    c = trace.correction
    if c.kind == "bonus":
        head = f'every depth accepted a candidate: <b>bonus</b> <code>{_esc(c.text)}</code> from {t} after the accepted path'
        colour = BONUS_COLOUR
    else:
        n = sum(x.depth == c.position for x in trace.tree.tries)
        which = f"all {n} candidates at depth {c.position + 1} were" if n > 1 else f"the only candidate at depth {c.position + 1} was"
        head = (f'{which} rejected: <b>resampled</b> <code>{_esc(c.text)}</code> from the residual left after the last '
                f'rejection')
        colour = FINAL_COLOUR
    top = sorted(c.candidates, key=lambda x: -x.final_prob)[:4]
    if all(x.id != c.token for x in top):  # the drawn token is always shown
        top = top[:3] + [x for x in c.candidates if x.id == c.token]
    chosen = f' style="outline:2px solid {colour}; padding:0 2px"'
    options = " ".join(f'<span{chosen if x.id == c.token else ""}><code>{_esc(x.text)}</code> {num(x.final_prob)}'
                       f'{" ◀" if x.id == c.token else ""}</span>' for x in top)
    return f'<div class="phase"><b>3. Correct</b> — {head}. Top of that law: {options}</div>'


def round_summary(trace: StepTrace) -> str:
    """One sentence: how many candidates were tried where, and what the round emitted."""
    tree = trace.tree
    tries = len(tree.tries)
    path = "".join(show(tree.nodes[i].text) for i in tree.path)
    kept = f"kept “{path}” ({trace.n_accepted} of {trace.gamma} depths)" if path else "kept no draft"
    return (f"{tree.drafts} chains, {len(tree.nodes)} distinct nodes scored in one target pass; {tries} "
            f"candidate{'s' if tries != 1 else ''} tried; {kept}, then a {trace.correction.kind} token: "
            f"{len(trace.emitted)} token{'s' if len(trace.emitted) != 1 else ''} this round.")


def tree_step_card(trace: StepTrace, notation: str = "leviathan", total_steps: int = 0) -> str:
    t, d = letters(notation)
    viewing = f' (viewing; latest is {total_steps})' if total_steps and trace.step != total_steps else ""
    mode = "greedy (T = 0)" if trace.greedy else "exact"
    rows = "".join(_try_row(x, trace, t, d) for x in trace.tree.tries)
    head = "".join(f'<th style="{CELL}">{x}</th>' for x in ("depth", "tried", f"accept if u &lt; min(1, {t}/{d})", "verdict"))
    return (f'<div class="card tree-card" data-drafts="{trace.drafts}" style="font-size:14px; line-height:1.3">'
            f'<div class="card-head"><b>Step {trace.step}</b>{viewing} · γ = {trace.gamma} · k = {trace.drafts} drafts '
            f'<span class="badge">{mode}</span> · {len(trace.emitted)} token{"s" if len(trace.emitted) != 1 else ""} '
            f'from one target pass</div>'
            f'<div class="round-summary" style="margin:2px 0">{html.escape(round_summary(trace))}</div>'
            f'<div class="phase"><b>1. Draft</b> — {trace.drafts} independent chains, one batched draft forward per '
            f'depth; chains that agree so far share a node (green: the accepted path, ① the order tried)</div>'
            f'{_grid(trace, t, d)}'
            f'<div class="phase"><b>2. Verify</b> — one target pass scored every node; at each depth the surviving '
            f'chains\' tokens are tried in a random order, each against the <i>current</i> {t}</div>'
            f'<table class="verify tree-tries" style="margin:2px 0"><tr>{head}</tr>{rows}</table>{_correction(trace, t)}</div>')


def tree_narration(trace: StepTrace, notation: str = "leviathan") -> str:
    """The tree round in words, in the algorithm's order (Markdown)."""
    t, d = letters(notation)
    tree = trace.tree
    lines = [f"#### Step {trace.step} (k = {tree.drafts} drafts)",
             (f"**1. Draft:** the draft model sampled {tree.drafts} chains of {trace.gamma} tokens independently; "
              f"chains that agree on their first tokens share those nodes, {len(tree.nodes)} distinct nodes in all."),
             "", ("**2. Verify:** the target scored every node in one pass. At each depth the candidates are the next "
                  "tokens of the chains that agree with everything accepted so far, tried in a random order; two "
                  "chains with the same token are two tries.")]
    for x in tree.tries:
        if trace.greedy:
            lines.append(f"- depth {x.depth + 1}, try {x.rank + 1}: “{show(x.text)}” (chain {x.chain + 1}): at "
                         f"temperature 0 it is kept only if it is the target's argmax: **{x.verdict}**.")
            continue
        cmp = "<" if x.verdict == "accepted" else "≥"
        against = f"the current {t} (after {x.rank} rejection{'s' if x.rank != 1 else ''} here)" if x.rank else t
        line = (f"- depth {x.depth + 1}, try {x.rank + 1}: “{show(x.text)}” (chain {x.chain + 1}): {d} = "
                f"{num(x.draft_prob)}, {against} = {num(x.target_prob)}; u = {num(x.uniform)} {cmp} "
                f"min(1, {t}/{d}) = {num(x.accept_prob)}: **{x.verdict}**.")
        if x.verdict == "rejected" and x.residual:
            moved = ", ".join(f"“{show(c.text)}” {num(c.target_prob)} → {num(c.final_prob)}" for c in x.residual[:3])
            line += f" So {t} becomes norm(max(0, {t} − {d})): {moved}."
        lines.append(line)
    c = trace.correction
    lines.append("")
    if c.kind == "bonus":
        lines.append(f"**3. Correct:** a candidate was accepted at every depth, so the target's distribution after "
                     f"the accepted path gave a bonus token “{show(c.text)}”.")
    else:
        lines.append(f"**3. Correct:** every candidate at depth {c.position + 1} was rejected, so “{show(c.text)}” was "
                     f"drawn from the residual left after the last rejection there: the mass the target still wants "
                     f"beyond what the draft offered, try after try.")
    lines.append(f"\n{round_summary(trace)} The output is still distributed exactly as the target's own samples.")
    if trace.notice:
        lines.append(f"\n*Note: {trace.notice}.*")
    return "\n".join(lines)


def tree_metric_rows(m: dict) -> str:
    """Rows for the debugging metrics table: acceptance by depth and by sibling rank (several drafts)."""
    if m.get("drafts", 1) <= 1:
        return ""
    depth = ", ".join(f"{x:.2f}" for x in m["acceptance_by_depth"])
    rank = ", ".join(f"{x:.2f} ({n})" for x, n in zip(m["acceptance_by_rank"], m["tries_by_rank"]) if n)
    return (f"<tr><td>acceptance by depth (k = {m['drafts']})</td><td><b>{depth}</b></td><td class=muted>share of "
            f"steps that examined depth 1, 2, … and accepted a candidate there</td></tr>"
            f"<tr><td>acceptance by sibling rank</td><td><b>{rank}</b></td><td class=muted>share of the 1st, 2nd, … "
            f"candidate tried at a depth that was accepted (tries)</td></tr>")
