"""Trace files: the header's version and producer, the older forms, and every bad file refused by name."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from specviz.core.recipe import Producer
from specviz.core.tracefile import TRACE_FORMAT, TraceFileError, header_line, read_recording

LESSON = Path(__file__).resolve().parents[2] / "assets" / "lessons" / "typical.jsonl"


@pytest.fixture(scope="module")
def lines() -> list[str]:
    return LESSON.read_text(encoding="utf-8").splitlines()


def test_a_lesson_file_reads_back_with_its_producer_settings_and_steps(lines):
    head = json.loads(lines[0])
    recording = read_recording("\n".join(lines))
    assert recording.producer == Producer(**head["producer"]) and recording.settings == head["settings"]
    run = recording.runs[0]
    assert run.prompt == head["prompts"][0] and len(run.traces) == len(lines) - 1
    assert [t.step for t in run.traces] == list(range(1, len(lines)))
    first = json.loads(lines[1])  # the oracle: the raw JSON, not the records
    assert [e.id for e in run.traces[0].emitted] == [e["id"] for e in first["emitted"]]
    assert [p.uniform for p in run.traces[0].positions] == [p["uniform"] for p in first["positions"]]


def test_older_forms_read_without_a_producer(lines):
    steps = [json.loads(x) for x in lines[1:]]
    for text in (json.dumps(steps), json.dumps({"text": "", "steps": steps}), "\n".join(lines[1:])):
        recording = read_recording(text)
        assert recording.producer is None and recording.steps == len(steps)


def test_runs_are_grouped_by_prompt_and_run_index(lines):
    step = json.loads(lines[1])
    text = "\n".join(json.dumps({**step, "prompt_index": p, "run_index": r}) for p, r in ((0, 0), (0, 1), (1, 0)))
    recording = read_recording(header_line(Producer(), {}, ["a", "b"]) + text)
    assert [(r.prompt_index, r.run_index, r.prompt) for r in recording.runs] == [(0, 0, "a"), (0, 1, "a"), (1, 0, "b")]


def test_another_format_version_is_refused_naming_both(lines):
    head = {**json.loads(lines[0]), "specviz_trace": TRACE_FORMAT + 1}
    with pytest.raises(TraceFileError, match=f"format {TRACE_FORMAT + 1}.*reads format {TRACE_FORMAT}"):
        read_recording("\n".join([json.dumps(head), *lines[1:]]))


def test_size_and_step_bounds_are_named(lines):
    text = "\n".join(lines)
    with pytest.raises(TraceFileError, match="over the 1,000 bytes allowed"):
        read_recording(text, max_bytes=1000)
    with pytest.raises(TraceFileError, match="over the 2 allowed"):
        read_recording(text, max_steps=2)


@pytest.mark.parametrize("mutate, said", [
    (lambda ls: ls[:2] + [ls[2][: len(ls[2]) // 2]], "line 3 .* is not JSON"),
    (lambda ls: [ls[0], ls[2]], "does not number its steps"),
    (lambda ls: [ls[0], ls[1].replace('"uniform": 0.', '"uniform": "0.', 1).replace(', "verdict"', '", "verdict"', 1)],
     "step 1 .*positions.uniform must be float or None, not str"),
    (lambda ls: [ls[0], json.dumps({"step": 1})], "step 1 .* is not a step trace"),
    (lambda ls: [ls[0], "[" * 100_000], "line 2 .* nests JSON too deeply|not JSON"),
    (lambda ls: [ls[0]], "holds no steps"),
])
def test_a_changed_or_cut_file_is_refused_naming_where(lines, mutate, said):
    with pytest.raises(TraceFileError, match=said):
        read_recording("\n".join(mutate(list(lines))))


def test_bytes_that_are_not_utf8_are_refused():
    with pytest.raises(TraceFileError, match="not UTF-8"):
        read_recording(b'{"step": 1}\xff\xfe')


def _with_race(lines, race) -> str:
    return "\n".join([json.dumps({**json.loads(lines[0]), "race": race}), *lines[1:]])


def test_the_headers_race_reads_back_with_the_settings_it_ran_with(lines):
    from tests.core.test_race_record import RACE, WRITTEN

    recording = read_recording(_with_race(lines, {**WRITTEN, "settings": {"seed": 35, "prompt": "ROMEO."}}))
    assert recording.race == RACE and recording.race_settings == {"seed": 35, "prompt": "ROMEO."}
    assert "race" not in recording.extra
    assert read_recording(header_line(Producer(), {}, ["a"]) + lines[1]).race is None  # a header without one


@pytest.mark.parametrize("race, said", [
    ("fast", "header: race must be an object, not str"),
    ({"first": "x"}, "header: race.target_only is missing"),
    ({"settings": {"a": [1]}}, "header: race.settings must be an object of at most 50 plain values"),
])
def test_a_bad_race_in_the_header_is_refused_naming_it(lines, race, said):
    with pytest.raises(TraceFileError, match=said):
        read_recording(_with_race(lines, race))
