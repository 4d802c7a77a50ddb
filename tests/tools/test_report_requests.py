"""`report --from-metrics` on vLLM's per-request stats: response bodies with metrics.speculative_decoding.

The fixture uses the field names and shape of vllm-project/vllm
docs/features/speculative_decoding/acceptance_metrics.md (PR #48915): a `summary` body (histogram only), a
`detailed` body (per-step arrays), a saved stream's final chunk (`data: {...}`, then `data: [DONE]`) and an
n > 1 body whose stats are null. The oracle counts the hand-written steps by hand.
"""
from __future__ import annotations

import json

import pytest

from tests import cli_runner
from tests.core.test_production import ONE

# request A, "detailed": 4 steps of k = 3 accepting 3, 0, 1, 3 drafts
DETAILED = {"id": "cmpl-a", "model": "m", "choices": [{"text": "…"}], "usage": {"completion_tokens": 11},
            "metrics": {"speculative_decoding": {
                "mean_acceptance_length": 1 + 7 / 4, "draft_acceptance_rate": 7 / 12,
                "acceptance_histogram": [1, 1, 0, 2], "num_spec_steps": 4, "num_accepted_draft_tokens": 7,
                "num_draft_tokens": 12, "num_spec_tokens": 3,
                "per_step_accepted": [3, 0, 1, 3], "per_step_drafted": [3, 3, 3, 3]}}}
# request B, "summary": 2 steps accepting 0 drafts, 1 accepting 2 (vLLM's doc example's fields)
SUMMARY = {"id": "cmpl-b", "model": "m", "choices": [], "usage": {},
           "metrics": {"speculative_decoding": {
               "mean_acceptance_length": 1 + 2 / 3, "draft_acceptance_rate": 2 / 9,
               "acceptance_histogram": [2, 0, 1, 0], "num_spec_steps": 3, "num_accepted_draft_tokens": 2,
               "num_draft_tokens": 9, "num_spec_tokens": 3}}}
NULL = {"id": "cmpl-c", "model": "m", "choices": [{}, {}], "metrics": {"speculative_decoding": None}}


def run_cli(*args):
    return cli_runner.run_cli("report", *args)


def jsonl(tmp_path, name="bodies.jsonl"):
    path = tmp_path / name
    stream_chunk = {**SUMMARY, "object": "text_completion"}
    path.write_text(json.dumps(DETAILED) + "\n" + json.dumps(NULL) + "\n"
                    + "data: " + json.dumps(stream_chunk) + "\n" + "data: [DONE]\n", encoding="utf-8")
    return path


def test_response_bodies_give_the_per_request_histogram_and_totals(tmp_path):
    out = run_cli("--from-metrics", str(jsonl(tmp_path)), "--cost-ratio", "0.1", "--out", str(tmp_path / "r"))
    assert out.returncode == 0, out.stderr
    s = json.loads((tmp_path / "r" / "summary.json").read_text())
    # hand counts: 7 steps, 9 accepted of 21 drafted; tested min(a + 1, 3): A 3+1+2+3, B 1+1+3
    assert (s["drafts"], s["accepted_tokens"], s["draft_tokens"]) == (7, 9, 21)
    assert s["alpha"] == pytest.approx(9 / 14) and s["mean_acceptance_length"] == pytest.approx(1 + 9 / 7)
    # accepted >= 1: A 3 of 4 steps, B 1 of 3; >= 2: A 2, B 1; >= 3: A 2
    assert s["per_position_acceptance"] == pytest.approx([4 / 7, 3 / 7, 2 / 7])
    pr = s["per_request"]
    assert pr["requests"] == 2 and s["bodies_without_stats"] == 1
    assert pr["acceptance_length_per_request"] == pytest.approx([2.75, 1 + 2 / 3])
    assert pr["acceptance_length_mean_over_requests"] == pytest.approx((2.75 + 5 / 3) / 2)
    # bins 0.25 wide from 1: 1.667 -> [1.5, 1.75), 2.75 -> the last bin
    assert pr["acceptance_length_histogram"]["counts"] == [0, 0, 1, 0, 0, 0, 0, 1]
    page = (tmp_path / "r" / "report.html").read_text()
    assert "per-request-histogram" in page and "pooled-per-request" in page


def test_a_json_array_beside_a_scrape_adds_per_request_to_the_counters(tmp_path):
    (tmp_path / "m.txt").write_text(ONE)
    (tmp_path / "b.json").write_text(json.dumps([DETAILED, SUMMARY]))
    out = run_cli("--from-metrics", str(tmp_path / "m.txt"), "--from-metrics", str(tmp_path / "b.json"),
                  "--out", str(tmp_path / "r"))
    assert out.returncode == 0, out.stderr
    s = json.loads((tmp_path / "r" / "summary.json").read_text())
    assert s["draft_acceptance_rate"] == pytest.approx(280 / 600)  # the scrape's counters
    assert s["per_request"]["requests"] == 2


@pytest.mark.parametrize("body, says", [
    ({"metrics": {"speculative_decoding": {**SUMMARY["metrics"]["speculative_decoding"], "num_spec_steps": 5}}},
     "do not add up"),
    ({"metrics": {"speculative_decoding": {"acceptance_histogram": [1]}}}, "has no num_spec_steps"),
    (NULL, "no per-request speculative-decoding stats"),
])
def test_bad_bodies_are_one_line_errors(tmp_path, body, says):
    (tmp_path / "b.jsonl").write_text(json.dumps(body) + "\n")
    out = run_cli("--from-metrics", str(tmp_path / "b.jsonl"), "--out", str(tmp_path / "r"))
    assert out.returncode == 2 and says in out.stderr and "Traceback" not in out.stderr


@pytest.mark.parametrize("content, says", [
    (b"\xe9\xff not text", "not UTF-8 text"),
    (b"[" * 100_000, "nested too deeply"),
])
def test_a_file_that_is_not_bodies_is_a_one_line_error_naming_it(tmp_path, content, says):
    (tmp_path / "b.jsonl").write_bytes(content)
    out = run_cli("--from-metrics", str(tmp_path / "b.jsonl"), "--out", str(tmp_path / "r"))
    lines = out.stderr.strip().splitlines()
    assert out.returncode == 2 and says in lines[-1] and lines[-1].startswith("error: ") and "Traceback" not in out.stderr


def test_whatif_reads_the_per_position_curve_of_response_bodies(tmp_path):
    out = cli_runner.run_cli("whatif", "--from-metrics", str(jsonl(tmp_path)), "--cost-ratio", "0.1", "--gammas", "3",
                             "--json")
    assert out.returncode == 0, out.stderr
    row = json.loads(out.stdout)["table"][0]
    assert row["acceptance_length"] == pytest.approx(1 + 4 / 7 + 3 / 7 + 2 / 7)
