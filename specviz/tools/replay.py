"""`python -m specviz replay TRACE [--run N] [--json]`: a recorded run's rounds on a terminal, no model loaded.

TRACE is a trace file (`core.tracefile`): the traces.jsonl `report` writes, a lesson of assets/lessons, or a
run exported from the page. Each round prints as the page's card tells it: what was drafted, u against the
accept chance and the verdict at each tested position, the token the correction added and where it came from;
then the race recorded with the run, where there is one: each lane's tokens, time and forwards.
"""
from __future__ import annotations

import json
from pathlib import Path

from ..core.notation import num, show
from ..core.race_record import Race
from ..core.trace import StepTrace
from ..core.tracefile import MAX_FILE_BYTES, Recording, TraceFileError, read_recording
from .plain import plain_text

SYMBOL = {"accepted": "✓", "rejected": "✗", "unexamined": "·"}


def read_trace_file(path: str) -> Recording:
    """The recording at `path`; ValueError naming the file when it cannot be read or is too large."""
    file = Path(path)
    if not file.is_file():
        raise ValueError(f"TRACE {path!r} is not a file")
    if file.stat().st_size > MAX_FILE_BYTES:
        raise ValueError(f"TRACE {path!r} is {file.stat().st_size:,} bytes, over the {MAX_FILE_BYTES:,} read here")
    try:
        return read_recording(file.read_bytes(), name=f"TRACE {path!r}")
    except OSError as err:
        raise ValueError(f"TRACE {path!r} cannot be read: {err.strerror or err}") from None


def round_lines(trace: StepTrace) -> list[str]:
    """One round as the card tells it, in plain text."""
    from ..present.draft_sources import stop_note  # present loads torch and plotly: only once `replay` runs
    from ..present.render import decisive

    drafted = " ".join(show(p.draft_text) for p in trace.positions) or "(nothing drafted)"
    auto = f" (auto, at most {trace.draft_stop.gamma_max})" if trace.draft_stop is not None else ""
    lines = [f"step {trace.step}  γ {trace.gamma}{auto}  T {trace.temperature:g}  drafted: {drafted}"]
    stop = stop_note(trace, "en")  # gamma auto: where and why drafting stopped, the card's sentence as plain text
    if stop:
        lines.append("  " + plain_text(stop))
    for p in trace.positions:
        u, chance = decisive(p.uniform, p.accept_prob) if p.uniform is not None else ("", "")
        test = ("not tested" if p.uniform is None else
                f"target argmax: {'agrees' if p.verdict == 'accepted' else 'differs'}" if trace.greedy else
                f"u {u} {'<' if p.uniform < p.accept_prob else '≥'} min(1, p/q) {chance}")
        lines.append(f"  {p.index + 1}. {SYMBOL.get(p.verdict, '?')} {show(p.draft_text):<12} q {num(p.draft_prob):<8} "
                     f"p {num(p.target_prob):<8} {test}  {p.verdict}")
    c = trace.correction
    lines.append(f"  + {c.kind} {show(c.text)} (position {c.position + 1}); kept {trace.n_accepted}, "
                 f"{len(trace.emitted)} token(s) from 1 target pass")
    return lines


def race_lines(race: Race) -> list[str]:
    """The recorded race: each lane's tokens, its own time and forwards, the speed-up and its slices' spread."""
    a, b = race.target_only, race.speculative
    spread = f", slices' middle half x{race.spread[0]:.2f}-x{race.spread[1]:.2f}" if race.spread else ""
    return [f"race on {race.device} ({'speculative' if race.first == 'speculative' else 'target-only'} first): "
            f"speed-up x{race.speedup:.2f}{spread}",
            f"  target-only  {len(a.texts)} tokens in {a.total_s:.2f} s, {a.target_passes} target passes",
            f"  speculative  {len(b.texts)} tokens in {b.total_s:.2f} s, {b.target_passes} target passes, "
            f"{b.draft_passes} draft passes",
            "  " + "".join(b.texts)]


def replay_text(recording: Recording, index: int) -> str:
    from ..present.recorded import recorded_label  # as round_lines: loaded when a replay runs

    run = recording.runs[index]
    head = (f"{recorded_label(recording.producer)}; run {index + 1} of {len(recording.runs)} "
            f"(prompt {run.prompt_index + 1}, run {run.run_index}), {len(run.traces)} step(s)")
    body = [line for trace in run.traces for line in round_lines(trace)]
    text = run.prompt + "".join(e.text for t in run.traces for e in t.emitted)
    race = ["", *race_lines(recording.race)] if recording.race else []
    return "\n".join([head, *body, "", text, *race])


def run_replay(path: str, run: int = 1, as_json: bool = False) -> str:
    recording = read_trace_file(path)
    if isinstance(run, bool) or not isinstance(run, int) or not 1 <= run <= len(recording.runs):
        raise ValueError(f"--run must be a whole number in 1..{len(recording.runs)} for this file, not {run!r}")
    if as_json:
        chosen = recording.runs[run - 1]
        producer = recording.producer.__dict__ if recording.producer else None
        return json.dumps({"producer": producer, "settings": recording.settings, "prompt": chosen.prompt,
                           "runs": len(recording.runs), "steps": [t.to_dict() for t in chosen.traces],
                           "race": recording.race.to_dict() if recording.race else None})
    return replay_text(recording, run - 1)


__all__ = ["TraceFileError", "run_replay", "read_trace_file"]


def cmd_replay(args) -> int:
    """`python -m specviz replay TRACE [--run N] [--json]`: the command line's entry."""
    print(run_replay(args.trace, run=args.run, as_json=args.json))
    return 0
