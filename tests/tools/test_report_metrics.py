"""`report --from-metrics`: files, two scrapes, an http URL (only ever 127.0.0.1), and one-line errors."""
from __future__ import annotations

import http.server
import json
import socket
import threading

import pytest

from tests import cli_runner
from tests.core.test_production import ONE, vllm_scrape


def run_cli(*args):
    return cli_runner.run_cli("report", *args)


def test_one_scrape_file_writes_summary_and_page(tmp_path):
    (tmp_path / "m.txt").write_text(ONE)
    out = run_cli("--from-metrics", str(tmp_path / "m.txt"), "--cost-ratio", "0.1", "--out", str(tmp_path / "r"))
    assert out.returncode == 0, out.stderr
    summary = json.loads((tmp_path / "r" / "summary.json").read_text())
    assert summary["draft_acceptance_rate"] == pytest.approx(280 / 600) and summary["best_gamma"] >= 1
    assert {"draft_acceptance_rate", "mean_acceptance_length", "alpha"} <= set(summary["definitions"])
    page = (tmp_path / "r" / "report.html").read_text()
    assert page.count("* plotly.js v") == 1 and "Acceptance by drafted position" in page


@pytest.fixture
def metrics_server():
    """A /metrics endpoint on 127.0.0.1 answering the scrapes queued in `answers`, in order."""
    answers = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            body = answers.pop(0).encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/plain; version=0.0.4")
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_port}/metrics", answers
    server.shutdown()


def test_two_url_scrapes_give_the_rates_between_them(tmp_path, metrics_server):
    url, answers = metrics_server
    answers += [ONE, vllm_scrape({"0": (150, 450, 200, [90, 65, 45]), "1": (130, 390, 160, [75, 50, 35])})]
    out = run_cli("--from-metrics", url, "--from-metrics", url, "--out", str(tmp_path / "r"))
    assert out.returncode == 0, out.stderr
    summary = json.loads((tmp_path / "r" / "summary.json").read_text())
    assert summary["drafts"] == 80 and summary["interval"] == "between the two scrapes"
    assert summary["expected_speedup_by_gamma"] is None  # no c given and no pair to measure it on


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.parametrize("case", ["unreachable", "no_metrics", "backwards"])
def test_errors_are_one_line_exit_2(tmp_path, case):
    (tmp_path / "plain.txt").write_text('vllm:num_requests_running{engine="0",model_name="m"} 1.0\n')
    (tmp_path / "one.txt").write_text(ONE)
    (tmp_path / "restarted.txt").write_text(vllm_scrape({"0": (1, 3, 1, [1, 0, 0]), "1": (1, 3, 0, [0, 0, 0])}))
    args = {"unreachable": ["--from-metrics", f"http://127.0.0.1:{_closed_port()}/metrics"],
            "no_metrics": ["--from-metrics", str(tmp_path / "plain.txt")],
            "backwards": ["--from-metrics", str(tmp_path / "one.txt"), "--from-metrics", str(tmp_path / "restarted.txt")]}
    out = run_cli(*args[case], "--out", str(tmp_path / "r"))
    assert out.returncode == 2 and out.stderr.startswith("error: ") and len(out.stderr.strip().splitlines()) == 1
    assert {"unreachable": "cannot fetch", "no_metrics": "no speculative-decoding", "backwards": "went backwards"}[case] \
        in out.stderr


def test_the_cost_ratio_is_measured_on_a_pair_when_one_is_given(tmp_path):
    (tmp_path / "m.txt").write_text(ONE)
    out = run_cli("--from-metrics", str(tmp_path / "m.txt"), "--preset", "shakespeare", "--out", str(tmp_path / "r"))
    assert out.returncode == 0, out.stderr[-1500:]
    summary = json.loads((tmp_path / "r" / "summary.json").read_text())
    assert summary["cost_ratio_source"] == "measured on the pair" and 0 < summary["cost_ratio_c"] < 5
    assert summary["best_gamma"] >= 1 and len(summary["expected_speedup_by_gamma"]) == 16
