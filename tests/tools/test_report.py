"""The report command and the export round trip on the bundled pair."""
from __future__ import annotations

import csv
import io
import json
import subprocess
import sys

from specviz.core.config import DecodeConfig
from specviz.core.metrics import metric_set
from specviz.core.trace import StepRecord
from specviz.engine.decoders import SpeculativeDecoder
from specviz.present import export


def test_report_writes_summary_traces_and_a_self_contained_page(tmp_path):
    prompts = tmp_path / "prompts.txt"
    prompts.write_text("ROMEO.\\nBut soft\nKING.\\nNow is the time\nHAMLET.\\nTo be, or not\n")
    out = subprocess.run([sys.executable, "-m", "specviz", "report", "--prompts", str(prompts), "--gamma", "3",
                          "--runs", "2", "--max-new-tokens", "24", "--out", str(tmp_path / "r")],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-1500:]
    assert "prompt 3/3 run 2/2" in out.stderr
    summary = json.loads((tmp_path / "r" / "summary.json").read_text())
    lines = [json.loads(x) for x in (tmp_path / "r" / "traces.jsonl").read_text().splitlines()]
    assert len(summary["prompts"]) == 3 and summary["overall"]["steps"] == len(lines)
    # every figure is what metric_set() gives on the records recomputed from traces.jsonl
    records = [StepRecord(**line["record"]) for line in lines]
    assert summary["overall"] == json.loads(json.dumps(metric_set(records)))
    first = [StepRecord(**x["record"]) for x in lines if x["prompt_index"] == 0]
    assert summary["prompts"][0]["acceptance_rate"] == metric_set(first)["acceptance_rate"]
    assert {x["run_index"] for x in lines} == {0, 1}
    for key in ("acceptance_rate", "draft_acceptance_rate", "mean_acceptance_length", "per_position_acceptance",
                "acceptance_length_histogram", "system_efficiency", "tokens_per_target_call", "steps"):
        assert key in summary["overall"] and key in summary["prompts"][0]
    assert len(summary["overall"]["acceptance_length_histogram"]) == 4
    page = (tmp_path / "r" / "report.html").read_text()
    assert "<script" in page and "cdn.plot.ly" not in page.split("</head>")[0] and "Plotly.newPlot" in page


def test_export_round_trip(pair):
    dec = SpeculativeDecoder(pair, "KING.\nNow", DecodeConfig(gamma=4, max_new_tokens=30, seed=5))
    traces = dec.run()
    assert export.read_traces_json(export.traces_json(traces)) == traces
    rows = list(csv.DictReader(io.StringIO(export.tokens_csv(traces))))
    assert len(rows) == sum(len(t.positions) + 1 for t in traces)
    emitted = [r for r in rows if r["verdict"] in ("accepted", "resampled", "bonus")]
    assert [int(r["token_id"]) for r in emitted][: len(dec.generated_ids)] == dec.generated_ids
    rejected = [t for t in traces if t.n_accepted < 4]
    assert len(export.rejections(traces)) == len(rejected)
