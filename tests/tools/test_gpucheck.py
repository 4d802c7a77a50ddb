"""`python -m specviz gpucheck`: on a machine without CUDA one error line and exit 2; its table and its reading
of pytest's report, from fixed inputs."""
from __future__ import annotations

import json

import pytest
import torch

from specviz.tools import gpucheck
from tests.cli_runner import run_cli

JUNIT = """<?xml version="1.0" encoding="utf-8"?><testsuites><testsuite name="pytest" errors="0" failures="1"
skipped="2" tests="7"><testcase classname="tests.engine.test_rewind" name="test_a"><properties>
<property name="pvalue" value="0.26"/></properties></testcase><testcase classname="tests.engine.test_x"
name="test_b"><failure message="boom"/></testcase></testsuite></testsuites>"""


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the answer of a machine without CUDA")
def test_without_cuda_it_prints_one_error_line_and_exits_2():
    done = run_cli("gpucheck", "--json")
    assert done.returncode == 2 and done.stdout == ""
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: gpucheck needs a CUDA device") and "--cpu" in lines[0]


def test_a_budget_outside_its_range_is_named():
    assert gpucheck.main(["--budget-s", "5"]) == 2


def test_pytests_report_gives_counts_failures_and_recorded_properties():
    summary = gpucheck.junit_summary(JUNIT)
    assert (summary["passed"], summary["failed"], summary["skipped"]) == (4, 1, 2)
    assert summary["properties"] == {"pvalue": "0.26"}
    assert summary["failed_tests"] == ["tests.engine.test_x.test_b"]


def test_rows_past_the_budget_are_marked_not_run_and_a_failing_row_is_its_own_answer():
    rows = (("first", 10, lambda t: {"ok": True, "figures": {"x": 1}}),
            ("broken", 10, lambda t: (_ for _ in ()).throw(RuntimeError("no device memory"))),
            ("late", 10, lambda t: {"ok": True, "figures": {}}))
    result = gpucheck.run_gpucheck(budget_s=4.0, rows=rows[:0] + rows)
    assert [row["status"] for row in result["rows"]] == ["not run: time budget"] * 3
    result = gpucheck.run_gpucheck(budget_s=60.0, rows=rows)
    assert [row["status"] for row in result["rows"]] == ["ok", "error: no device memory", "ok"]
    text = gpucheck.table(result)
    assert "first" in text and "x 1" in text and "error: no device memory" in text


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the CPU form of a machine without CUDA")
def test_cpu_runs_only_the_round_row_and_says_no_cuda_for_what_only_cuda_counts(monkeypatch, capsys):
    """`--cpu`: one row, the round's counts per kind of step on the static cache; the profiler's and CUDA's own
    figures are "no CUDA" (2 steps each, so the test stays fast; test_host_reads.py states the counts)."""
    monkeypatch.setattr(gpucheck, "COUNTED_STEPS", 2)
    assert gpucheck.main(["--cpu", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["device"] == "cpu" and [row["check"] for row in result["rows"]] == ["round"]
    figures = result["rows"][0]["figures"]
    assert figures["cache"] == "static" and figures["regions"] == "the static cache with CUDA graphs is off"
    for kind in ("round_traces_on", "round_traces_off", "target_only_step"):
        counts = figures[kind]
        assert counts["host_reads"] == 1.0 and counts["torch_calls"] > counts["ops_outside_regions"] >= 0
        assert [counts[k] for k in ("kernel_launches_outside_graphs", "graph_replays", "syncs")] == ["no CUDA"] * 3
    assert figures["round_traces_on"]["torch_calls"] > figures["round_traces_off"]["torch_calls"]


def test_the_gain_of_the_regions_is_the_bench_with_them_over_the_bench_without():
    rows = [{"check": "bench graphs", "figures": {"speedup_vs_target_only": 1.5}},
            {"check": "bench forwards", "figures": {"speedup_vs_target_only": 1.2}}]
    assert gpucheck.regions_gain(rows) == 1.25
    assert gpucheck.regions_gain(rows[:1]) is None
    assert "round_traces_on.host_reads 1" in gpucheck.table(
        {"rows": [{"check": "round", "status": "ok", "seconds": 1.0,
                   "figures": {"round_traces_on": {"host_reads": 1}}}], "total_s": 1.0})
