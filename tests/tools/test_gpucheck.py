"""`python -m specviz gpucheck`: on a machine without CUDA one error line and exit 2; its table and its reading
of pytest's report, from fixed inputs."""
from __future__ import annotations

import subprocess
import sys

import pytest
import torch

from specviz.tools import gpucheck

JUNIT = """<?xml version="1.0" encoding="utf-8"?><testsuites><testsuite name="pytest" errors="0" failures="1"
skipped="2" tests="7"><testcase classname="tests.engine.test_rewind" name="test_a"><properties>
<property name="pvalue" value="0.26"/></properties></testcase><testcase classname="tests.engine.test_x"
name="test_b"><failure message="boom"/></testcase></testsuite></testsuites>"""


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the answer of a machine without CUDA")
def test_without_cuda_it_prints_one_error_line_and_exits_2():
    done = subprocess.run([sys.executable, "-m", "specviz", "gpucheck", "--json"], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 2 and done.stdout == ""
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: gpucheck needs a CUDA device")


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
