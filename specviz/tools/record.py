"""`python -m specviz record-lessons [--out DIR]`: record the page's three lessons into assets/lessons/.

Each lesson is a short seeded run on an offline pair, chosen for what it teaches, recorded with its target-only
twin (`ComparedRun`, as the page steps) and a race of the same settings (as the Race button runs it) into a trace
file (`core.tracefile`): the page opens the first of them, race lanes included, before any model loads. Each step has one sentence of what to notice (catalogue keys lesson.<name>.<step>, in
en/zh/ja); the sentences describe the recorded rounds, so `expect` checks each round still has the shape its
sentence describes: a re-recording after a change to the models or the decoders fails, naming the lesson and
step, instead of shipping sentences that no longer fit. A lesson may also ask misconceptions (present/myths.py) before
a round, in predict mode: the header's "questions" field, {"<step>": ["<id>", ...]}.
"""
from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path

from ..core import tracefile
from ..core.trace import StepTrace
from ..engine.decoding.drafters import PromptLookup
from ..engine.models.presets import PRESETS
from ..engine.serving.race import run_race
from ..engine.serving.run import ComparedRun, RunSettings, WarmRuns
from ..present.page_settings import PageSettings, settings_from
from ..present.recorded import LESSONS, lesson_path
from ..present.share import producer_of, settings_of


def shape(trace: StepTrace) -> str:
    """A round as the sentences describe it: "kept 2 of 4, resampled: ' is the matter'" (drafts kept of those
    drafted, how the round ended, the text it added)."""
    added = "".join(e.text for e in trace.emitted)
    return f"kept {trace.n_accepted} of {len(trace.positions)}, {trace.correction.kind}: {added!r}"


@dataclass(frozen=True)
class Lesson:
    """A lesson's recipe: the page's settings, and the shape of each round its sentences describe."""
    name: str
    preset: str
    prompt: str
    temperature: float
    seed: int
    expect: tuple[str, ...]       # shape(trace) of steps 1, 2, ...: the rounds the sentences were written for
    gamma: int = 4
    drafter: str = "model"
    max_new_tokens: int = 80
    asks: tuple = ()              # (step, misconception ids) asked before that round in predict mode

    def questions(self) -> dict:
        """The header's "questions" field: {"<step>": [ids]}."""
        return {str(step): list(ids) for step, ids in self.asks}

    def run_settings(self) -> RunSettings:
        return settings_from(PageSettings(notation="leviathan", preset=self.preset, prompt=self.prompt, gamma=self.gamma,
                                          temperature=self.temperature, top_k=0, top_p=1.0, kl_budget=0.0,
                                          seed=self.seed, max_new_tokens=self.max_new_tokens, draft_model="",
                                          target_model="", drafter=self.drafter))


FIX_SPELLING = dict(PRESETS["smollm2-local"].lookup_examples)["fix-spelling"]
LESSON_RECIPES = {
    # a typical mix at T 0.5 (a kept prefix and a resample, bonus tokens, an early rejection), seed 110 (the page's
    # default: its first Steps replay this lesson; seed 35 until the last token was drawn by an exponential race)
    "typical": Lesson("typical", "shakespeare", "ROMEO.\nBut soft, what light", 0.5, 110, (
        "kept 2 of 4, resampled: ' is the matter'", "kept 4 of 4, bonus: '?\\n\\n[Enter'",
        "kept 4 of 4, bonus: ' a Messenger.]\\n'", "kept 1 of 4, resampled: '\\nLADY'",
        "kept 4 of 4, bonus: ' MACBETH.\\nMy lord'"),
        asks=((1, ("argmax",)), (3, ("speedup",)), (5, ("same-text",)))),
    # the T = 0 limit: both distributions one-hot, the rule is the argmax test ("greedy match")
    "greedy": Lesson("greedy", "shakespeare", "ROMEO.\nBut soft, what light", 0.0, 8, (
        "kept 3 of 4, resampled: 's are the king'", "kept 4 of 4, bonus: '?\\n\\n[Enter'",
        "kept 3 of 4, resampled: ' CAESAR and'", "kept 1 of 4, resampled: ' SOMERSET'",
        "kept 3 of 4, resampled: '.]\\n\\nQUEEN'")),
    # prompt lookup on the chat pair: the answer copies the paragraph it corrects, and the misspellings are rejected
    "copying": Lesson("copying", "smollm2-local", FIX_SPELLING, 0.0, 0, (
        "kept 0 of 4, resampled: 'The'", "kept 0 of 0, bonus: ' quick'", "kept 2 of 4, resampled: ' brown fox jumped'",
        "kept 0 of 0, bonus: ' over'", "kept 1 of 4, resampled: ' the lazy'", "kept 0 of 0, bonus: ' dog'",
        "kept 4 of 4, bonus: '. It was a sunny'", "kept 4 of 4, bonus: ' day and the fox was'"), drafter=PromptLookup.kind,
        asks=((1, ("family", "wasted")),)),
}


def record_lesson(lesson: Lesson, out: Path, progress=None) -> Path:
    """Run `lesson` for as many steps as it has sentences, check each round's shape, write <out>/<name>.jsonl."""
    progress = sys.stderr if progress is None else progress  # looked up now: a caller may have redirected it
    run = ComparedRun(lesson.run_settings(), stateless=False, warm=WarmRuns(1))
    for step, wanted in enumerate(lesson.expect, 1):
        got = shape(run.step())
        if got != wanted:
            raise ValueError(f"lesson {lesson.name}, step {step}: the round now {got}, its sentence describes "
                             f"'{wanted}'; choose another seed or rewrite lesson.{lesson.name}.{step} in every locale")
        print(f"{lesson.name} step {step}: {got}", file=progress, flush=True)
    _, calls = run.timings()
    settings = settings_of(run.settings, "leviathan")
    race = run_race(lesson.run_settings(), speculative_first=True)
    print(f"{lesson.name} race: x{race.speedup:.2f}", file=progress, flush=True)
    path = out / f"{lesson.name}.jsonl"
    out.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.write(tracefile.header_line(producer_of(run), settings, [run.settings.prompt], lesson=lesson.name,
                                      baseline_call_s=[round(x, 6) for x in calls],
                                      race=tracefile.race_entry(race, settings), questions=lesson.questions()))
        for trace in run.traces:
            f.write(tracefile.step_line(trace))
    return path


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m specviz record-lessons", description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=None, help="folder to write into (default: assets/lessons)")
    ap.add_argument("--lesson", choices=LESSONS, action="append", help="record only this lesson (repeatable)")
    args = ap.parse_args(argv)
    out = Path(args.out) if args.out else lesson_path(LESSONS[0]).parent
    try:
        for name in args.lesson or LESSONS:
            print(f"wrote {record_lesson(LESSON_RECIPES[name], out)}", file=sys.stderr)
    except (ValueError, OSError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    return 0
