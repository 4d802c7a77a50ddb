"""A trace `report` wrote opens in `replay` and `report --from-traces`; the recorded lessons are complete."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from specviz.present.i18n import CATALOGUE
from specviz.present.recorded import LESSONS, lesson_path
from specviz.tools.record import LESSON_RECIPES
from tests.cli_runner import run_cli


def specviz(*args):
    return run_cli(*map(str, args))


@pytest.fixture(scope="module")
def report_traces(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("report")
    prompts = folder / "prompts.txt"
    prompts.write_text("ROMEO.\\nBut soft\n")
    out = specviz("report", "--prompts", prompts, "--gamma", "3", "--max-new-tokens", "12", "--out", folder / "r")
    assert out.returncode == 0, out.stderr[-1500:]
    return folder / "r" / "traces.jsonl"


def raw_steps(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text().splitlines()[1:]]


def test_replay_prints_every_recorded_round_with_its_verdicts(report_traces):
    out = specviz("replay", report_traces)
    assert out.returncode == 0, out.stderr
    steps = raw_steps(report_traces)
    assert out.stdout.startswith("recorded on cpu")
    assert [line.split()[1] for line in out.stdout.splitlines() if line.startswith("step ")] == \
        [str(s["step"]) for s in steps]
    verdicts = [line.split()[-1] for line in out.stdout.splitlines() if line[:4].strip().rstrip(".").isdigit()]
    assert verdicts == [p["verdict"] for s in steps for p in s["positions"]]
    text = "ROMEO.\nBut soft" + "".join(e["text"] for s in steps for e in s["emitted"])
    assert out.stdout.rstrip("\n").endswith(text)


def test_replay_json_parses_and_holds_the_steps(report_traces):
    out = specviz("replay", report_traces, "--json")
    data = json.loads(out.stdout)
    assert data["producer"]["device"] == "cpu" and data["prompt"] == "ROMEO.\nBut soft"
    assert [s["emitted"] for s in data["steps"]] == [s["emitted"] for s in raw_steps(report_traces)]


def test_report_from_traces_gives_the_acceptance_counted_by_hand(report_traces, tmp_path):
    out = specviz("report", "--from-traces", report_traces, "--out", tmp_path)
    assert out.returncode == 0, out.stderr[-1500:]
    summary = json.loads((tmp_path / "summary.json").read_text())
    positions = [p for s in raw_steps(report_traces) for p in s["positions"]]
    tested = [p for p in positions if p["uniform"] is not None]
    accepted = [p for p in tested if p["verdict"] == "accepted"]
    assert summary["overall"]["acceptance_rate"] == pytest.approx(len(accepted) / len(tested))
    assert summary["rejection_analysis"]["tested"] == len(tested)
    assert summary["source"]["producer"]["device"] == "cpu"
    assert (tmp_path / "report.html").read_text().startswith("<!")


@pytest.mark.parametrize("content, said", [
    (None, "is not a file"),
    (b"not json\n", "line 1 .* is not JSON"),
    (b'{"specviz_trace": 9}\n{"step": 1}\n', "trace format 9"),
    (b"\xff\xfe", "not UTF-8"),
])
def test_a_bad_trace_file_is_one_error_line_and_exit_2(tmp_path, content, said):
    path = tmp_path / "t.jsonl"
    if content is not None:
        path.write_bytes(content)
    out = specviz("replay", path)
    assert out.returncode == 2 and out.stdout == ""
    assert len(out.stderr.strip().splitlines()) == 1 and out.stderr.startswith("error: ")
    import re
    assert re.search(said, out.stderr), out.stderr


def test_from_traces_refuses_prompts_beside_it(report_traces, tmp_path):
    out = specviz("report", "--from-traces", report_traces, "--prompts", report_traces, "--out", tmp_path)
    assert out.returncode == 2 and "--from-traces reads a trace file alone" in out.stderr


@pytest.mark.parametrize("name", LESSONS)
def test_each_lesson_is_recorded_with_a_sentence_per_step_in_every_language(name):
    lines = lesson_path(name).read_text(encoding="utf-8").splitlines()
    head, steps = json.loads(lines[0]), [json.loads(x) for x in lines[1:]]
    assert head["lesson"] == name and head["producer"]["device"]
    assert len(steps) == len(LESSON_RECIPES[name].expect) and len(head["baseline_call_s"]) > 0
    for code, texts in CATALOGUE.items():
        assert texts[f"lesson.{name}.title"], code
        for step in range(1, len(steps) + 1):
            assert texts[f"lesson.{name}.{step}"].strip(), (code, step)
        assert f"lesson.{name}.{len(steps) + 1}" not in texts


def test_the_lessons_teach_what_their_names_say():
    typical, greedy, lookup = ([json.loads(x) for x in lesson_path(n).read_text().splitlines()] for n in LESSONS)
    assert typical[0]["settings"]["temperature"] == 0.5 and greedy[0]["settings"]["temperature"] == 0
    kinds = {p["verdict"] for s in typical[1:] for p in s["positions"]} | {s["correction"]["kind"] for s in typical[1:]}
    assert {"accepted", "rejected", "resampled", "bonus"} <= kinds
    assert lookup[0]["settings"]["drafter"] == "lookup" and lookup[0]["settings"]["preset"] == "smollm2-local"
    assert all(s["lookup"]["in_prompt"] for s in lookup[1:] if s.get("lookup") and s["lookup"]["ngram"])


def test_replay_prints_a_lessons_recorded_race_lane_by_lane():
    path = lesson_path("typical")
    race = json.loads(path.read_text(encoding="utf-8").splitlines()[0])["race"]
    base, spec = race["target_only"], race["speculative"]
    # the oracle: the speed-up from the raw lanes, tokens per second each way
    speedup = (len(spec["texts"]) / spec["times_s"][-1]) / (len(base["texts"]) / base["times_s"][-1])
    out = specviz("replay", path)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    head = next(line for line in lines if line.startswith("race on "))
    assert f"speed-up x{speedup:.2f}" in head
    assert any(line.split()[:3] == ["target-only", str(len(base["texts"])), "tokens"] for line in lines)
    assert out.stdout.rstrip("\n").endswith("".join(spec["texts"]).rstrip("\n"))
    data = json.loads(specviz("replay", path, "--json").stdout)
    assert data["race"]["speculative"]["texts"] == spec["texts"]
