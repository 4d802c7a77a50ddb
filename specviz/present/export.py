"""A run's traces out of the app: a trace file (`core.tracefile`: a header naming who recorded it, where and when,
with the tab's race, then a step a line), the traces as JSON data and a per-token CSV."""
from __future__ import annotations

import csv
import io
import json

from ..core import rejections as core_rejections
from ..core import tracefile
from ..core.notation import num, show
from ..core.race_record import Race
from ..core.recipe import Producer
from ..core.trace import StepTrace

CSV_COLUMNS = ["step", "position", "token_id", "token", "verdict", "draft_prob", "target_prob", "accept_prob",
               "exact_accept_prob", "uniform", "tv", "kl"]


def traces_json(traces: list[StepTrace]) -> str:
    return json.dumps([t.to_dict() for t in traces])


def trace_file(traces: list[StepTrace], producer: Producer, settings: dict, prompt: str, baseline_call_s=(),
               race: Race | None = None, race_settings: dict | None = None) -> str:
    """The run as a trace file the page, `replay` and `report --from-traces` open: a header (producer, settings,
    prompt, the target-only side's forward times, the race where one ran) then one step a line."""
    extra = {"baseline_call_s": [round(x, 6) for x in baseline_call_s]}
    if race is not None:
        extra["race"] = tracefile.race_entry(race, race_settings or {})
    return tracefile.header_line(producer, settings, [prompt], **extra) + "".join(tracefile.step_line(t) for t in traces)


def read_traces_json(text: str) -> list[StepTrace]:
    return [StepTrace.from_dict(d) for d in json.loads(text)]


def token_rows(traces: list[StepTrace]) -> list[dict]:
    """One row per drafted token (its verdict, or "unexamined") and one per resampled or bonus token."""
    rows = []
    for tr in traces:
        for p in tr.positions:
            rows.append({"step": tr.step, "position": p.index + 1, "token_id": p.draft_token, "token": p.draft_text,
                         "verdict": p.verdict, "draft_prob": p.draft_prob, "target_prob": p.target_prob,
                         "accept_prob": p.accept_prob, "exact_accept_prob": p.exact_accept_prob,
                         "uniform": "" if p.uniform is None else p.uniform, "tv": p.tv, "kl": p.kl})
        c = tr.correction
        chosen = next((x for x in c.candidates if x.id == c.token), None)
        rows.append({"step": tr.step, "position": c.position + 1, "token_id": c.token, "token": c.text, "verdict": c.kind,
                     "draft_prob": chosen.draft_prob if chosen else "", "target_prob": chosen.target_prob if chosen else "",
                     "accept_prob": "", "exact_accept_prob": "", "uniform": "", "tv": "", "kl": ""})
    return rows


def tokens_csv(traces: list[StepTrace]) -> str:
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=CSV_COLUMNS)
    writer.writeheader()
    writer.writerows(token_rows(traces))
    return out.getvalue()


def rejections(traces: list[StepTrace], context_chars: int = 24) -> list[list]:
    """Every rejection of the run: step, position, the text just before it, drafted token, p, q, u,
    accept chance, the resampled token. Probabilities as text that never rounds a small one to 0
    (2.1e-05); tokens with spaces, newlines and tabs shown as ␣ ⏎ ⇥, as on the step card."""
    rows, text = [], ""
    for tr in traces:
        for p in tr.positions:
            if p.verdict == "rejected":
                before = text + "".join(e.text for e in tr.emitted[: p.index])
                rows.append([tr.step, p.index + 1, before[-context_chars:], show(p.draft_text), num(p.target_prob),
                             num(p.draft_prob), num(p.uniform), num(p.accept_prob), show(tr.correction.text)])
        text += "".join(e.text for e in tr.emitted)
    return rows


def most_rejected(traces: list[StepTrace], top: int = 8) -> list[dict]:
    """The draft tokens rejected most often among those tested at least MIN_SUPPORT times (the
    report's rule): token, n tested, rejected, rejection rate and its 95% Wilson interval."""
    return core_rejections.most_rejected(core_rejections.tested_drafts(traces), core_rejections.MIN_SUPPORT, top)
