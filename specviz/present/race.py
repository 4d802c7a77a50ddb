"""The race as HTML: two lanes, target-only above speculative decoding, replayed by the page on one clock.

Each token carries the time (ms after its side's first forward began) at which it was ready; the page's
script (app/page.js, "race") shows the tokens as its clock passes those times, both lanes on the same
clock, so whatever slows the browser slows both. Without the script (a test, a saved page) every token
shows at once and the totals still tell the result.
"""
from __future__ import annotations

import html
import itertools

from ..core.race_record import Race
from ..engine.serving.quiet import BUSY_CORES
from .i18n import tr
from .palette import var
from .render import ROLE, VERDICT_STYLE, Status

_IDS = itertools.count(1)  # a fresh id per rendering: the page replays each new race once


def _token(text: str, kind: str, ms: float) -> str:
    shown = html.escape(text.replace(" ", "\u00a0") if text.strip() == "" and "\n" not in text else text) or "∅"
    style = ""
    if kind in VERDICT_STYLE:  # the speculative lane marks tokens as the step card does
        style = f' style="{VERDICT_STYLE[kind][2]} {var(ROLE[kind])}"'
    return f'<span class="race-tok {kind}" data-ms="{ms:.1f}"{style}>{shown}</span>'


def _lane(lane, name: str, passes: str, lang: str) -> str:
    tokens = "".join(_token(t, k, 1e3 * s) for t, k, s in zip(lane.texts, lane.kinds, lane.times_s))
    return (f'<div class="race-lane" data-side="{lane.side}" data-total-ms="{1e3 * lane.total_s:.1f}">'
            f'<div class="race-head"><b>{name}</b> <span class="race-clock">{lane.total_s:.2f} s</span> '
            f'<span class="race-passes">{passes}</span></div>'
            f'<div class="race-text">{tokens}</div></div>')


def race_html(race: Race | None, lang: str = "en", mark: str = "") -> str:
    """The race, or a line saying what the Race button does; `mark` (HTML) heads a recorded race's caption."""
    if race is None:
        return f'<div class="race empty">{tr(lang, "race.empty")}</div>'
    a, b = race.target_only, race.speculative
    first = tr(lang, "race.first_" + race.first)
    legend = " ".join(f'<span class="race-tok shown {k}" style="{VERDICT_STYLE[k][2]} {var(ROLE[k])}">'
                      f'{tr(lang, f"verdict.{k}")}</span>' for k in ("accepted", "resampled", "bonus"))
    result = tr(lang, "race.result", base=f"{a.total_s:.2f}", spec=f"{b.total_s:.2f}", s=f"{race.speedup:.2f}",
                n_base=len(a.texts), n_spec=len(b.texts))
    notes = _notes(race, lang)
    return (f'<div class="race" data-race="{next(_IDS)}">'
            f'<div class="race-caption">{mark}{tr(lang, "race.caption", first=first, device=html.escape(race.device))}</div>'
            + '<div class="race-lanes">'
            + _lane(a, tr(lang, "cnt.target_only"), tr(lang, "race.passes", n=a.target_passes), lang)
            + _lane(b, tr(lang, "cnt.speculative"), tr(lang, "race.passes_spec", n=b.target_passes, d=b.draft_passes)
                    if b.draft_passes else tr(lang, "race.passes", n=b.target_passes), lang)
            + '</div>'
            + f'<div class="race-foot"><span class="race-result">{result}</span>{notes} '
              f'<button class="race-replay" data-slow="1">{tr(lang, "race.replay")}</button> '
              f'<button class="race-replay" data-slow="10">{tr(lang, "race.replay_slow")}</button>'
              f'<div class="legend">{legend}</div></div></div>')


def _notes(race: Race, lang: str) -> str:
    """How far to trust the figure: the slices' spread, and whether other processes were busy meanwhile."""
    notes = []
    if race.spread is not None:
        lo, hi = race.spread
        notes.append(tr(lang, "race.spread", n=len(race.slice_speedups), lo=f"{lo:.2f}", hi=f"{hi:.2f}"))
    if race.others_busy_cores is not None and race.others_busy_cores >= BUSY_CORES:
        notes.append(tr(lang, "race.busy", cores=f"{race.others_busy_cores:.1f}"))
    return "".join(f' <span class="race-note">{html.escape(note)}</span>' for note in notes)


def race_status(race: Race, lang: str = "en") -> Status:
    """The message under the race: why it ended early (the deadline) or short (capped by its prediction), else none."""
    if race.stopped_s:
        return Status("error", tr(lang, "race.stopped", limit=f"{race.stopped_s:g}", n_base=len(race.target_only.texts),
                                  n_spec=len(race.speculative.texts)))
    if race.capped_to:
        return Status("info", tr(lang, "race.capped", predicted=f"{race.predicted_s or 0:.0f}", n=race.capped_to,
                                 requested=race.requested, limit=f"{race.limit_s:g}"))
    return Status()
