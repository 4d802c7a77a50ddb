"""A run's traces out of the app: JSON (the traces as `generate --json` prints them) and a per-token CSV."""
from __future__ import annotations

import csv
import io
import json

from ..core.trace import StepTrace

CSV_COLUMNS = ["step", "position", "token_id", "token", "verdict", "draft_prob", "target_prob", "accept_prob",
               "exact_accept_prob", "uniform", "tv", "kl"]


def traces_json(traces: list[StepTrace]) -> str:
    return json.dumps([t.to_dict() for t in traces])


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
    accept chance, the resampled token."""
    rows, text = [], ""
    for tr in traces:
        for p in tr.positions:
            if p.verdict == "rejected":
                before = text + "".join(e.text for e in tr.emitted[: p.index])
                rows.append([tr.step, p.index + 1, before[-context_chars:], p.draft_text, round(p.target_prob, 4),
                             round(p.draft_prob, 4), round(p.uniform, 4), round(p.accept_prob, 4), tr.correction.text])
        text += "".join(e.text for e in tr.emitted)
    return rows


def most_rejected(traces: list[StepTrace], top: int = 8) -> list[tuple[str, int, int]]:
    """(token, times rejected, times tested) for the draft tokens rejected most often."""
    tested: dict[str, list[int]] = {}
    for tr in traces:
        for p in tr.positions:
            if p.uniform is not None:
                entry = tested.setdefault(p.draft_text, [0, 0])
                entry[0] += p.verdict == "rejected"
                entry[1] += 1
    ranked = sorted(((tok, r, n) for tok, (r, n) in tested.items() if r), key=lambda x: (-x[1], -x[1] / x[2]))
    return ranked[:top]
