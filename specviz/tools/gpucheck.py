"""`python -m specviz gpucheck [--json] [--cpu]`: everything a lent GPU should answer, in one table, in minutes.

Rows, each under its own time cap within a total budget (6 minutes by default; a row that would start past
it is "not run: time budget"):
  tests          the CUDA-capable tests on the device (SPECVIZ_TEST_DEVICE=cuda, float32); tests marked
                 `cpu_only` are skipped there
  rewind         one decoder captured once as CUDA graphs, rewound after a rejection, 2,000 seeded rounds:
                 chi-square p of the first emitted token (tests/engine/test_rewind.py)
  round          what a speculative round (traces on and off) and a target-only step cost the host
                 (`tools/round_counts.py`): kernel launches outside graphs and graph replays (torch.profiler),
                 host-device synchronisations (torch.cuda.set_sync_debug_mode), host reads, operations outside
                 the round's two regions and torch calls (engine/decoding/counting.py), per round and per step
  bench graphs   `bench --device cuda --quick --json`: the round's two regions replayed as CUDA graphs
  bench forwards the same with SPECVIZ_CUDA_GRAPHS=forwards: each forward a graph, the decision eager
  bench eager    the same with SPECVIZ_CUDA_GRAPHS=0
  lookup         `bench --drafter lookup --device cuda --quick --json`
  smollm2, qwen2.5   `bench --preset NAME --random-weights --device cuda --json`: c eager and on graphs
Without a CUDA device it prints one `error:` line and exits 2, unless `--cpu`: then it runs the round row on the
CPU (its CUDA figures say "no CUDA") and nothing else, which means nothing there. stdout is the table (or JSON
with --json); progress goes to stderr.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from pathlib import Path

from ..engine.decoding.drafters import PromptLookup

BUDGET_S = 360
ROOT = Path(__file__).resolve().parents[2]
CUDA_ENV = {"SPECVIZ_TEST_DEVICE": "cuda", "SPECVIZ_TEST_DTYPE": "float32"}
TEST_PATHS = ("tests/core/test_device_round.py", "tests/engine")
COUNTED_STEPS = 10


def _log(message: str) -> None:
    print(f"gpucheck: {message}", file=sys.stderr, flush=True)


def _run(cmd: list[str], timeout: float, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, cwd=ROOT, env={**os.environ, **(env or {})}, capture_output=True, text=True,
                          timeout=max(timeout, 1))


def junit_summary(xml_text: str) -> dict:
    """passed / failed / skipped counts and each test's recorded properties from a pytest junit XML."""
    root = ET.fromstring(xml_text)
    suites = [root] if root.tag == "testsuite" else root.findall("testsuite")
    totals = {key: sum(int(s.get(key, 0)) for s in suites) for key in ("tests", "failures", "errors", "skipped")}
    properties = {p.get("name"): p.get("value") for p in root.iter("property")}
    failed = [f"{c.get('classname')}.{c.get('name')}" for c in root.iter("testcase")
              if c.find("failure") is not None or c.find("error") is not None]
    return {"passed": totals["tests"] - totals["failures"] - totals["errors"] - totals["skipped"],
            "failed": totals["failures"] + totals["errors"], "skipped": totals["skipped"],
            "properties": properties, "failed_tests": failed}


def _pytest(paths, timeout: float, extra=()) -> dict:
    # addopts emptied: one GPU runs one test at a time, and a lent machine may lack pytest-xdist
    with tempfile.TemporaryDirectory() as tmp:
        xml = Path(tmp) / "junit.xml"
        done = _run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-o", "addopts=", "-m", "not cpu_only",
                     f"--junitxml={xml}", *extra, *paths], timeout, CUDA_ENV)
        if not xml.exists():
            raise RuntimeError(f"pytest wrote no report: {(done.stderr or done.stdout).strip()[-200:]}")
        return junit_summary(xml.read_text())


def row_tests(timeout: float) -> dict:
    s = _pytest(TEST_PATHS, timeout, ("--ignore=tests/engine/test_rewind.py",))
    return {"ok": s["failed"] == 0, "figures": {k: s[k] for k in ("passed", "failed", "skipped")},
            "detail": ", ".join(s["failed_tests"][:5])}


def row_rewind(timeout: float) -> dict:
    s = _pytest(("tests/engine/test_rewind.py",), timeout)
    pvalue = s["properties"].get("pvalue")
    return {"ok": s["failed"] == 0 and s["passed"] == 1,
            "figures": {"pvalue": float(pvalue) if pvalue else None, "cache": s["properties"].get("cache_kind")}}


def _bench(args: list[str], timeout: float, env: dict | None = None) -> dict:
    done = _run([sys.executable, "-m", "specviz", "bench", "--device", "cuda", "--json", *args], timeout, env)
    if done.returncode != 0:
        raise RuntimeError((done.stderr.strip().splitlines() or ["bench failed"])[-1])
    return json.loads(done.stdout)


BENCH_FIGURES = ("tokens_per_s_speculative", "tokens_per_s_target_only", "speedup_vs_target_only",
                 "measured_over_cost_model", "cost_ratio_c", "draft_ms", "target_ms", "target_verify_ms", "cache",
                 "regions_off")


def row_bench(timeout: float, graphs: str) -> dict:
    """`bench --quick` with SPECVIZ_CUDA_GRAPHS=`graphs` (1: the round's regions, forwards: each forward, 0: eager)."""
    result = _bench(["--quick"], timeout, {"SPECVIZ_CUDA_GRAPHS": graphs})
    return {"ok": True, "figures": {k: result.get(k) for k in BENCH_FIGURES if k in result}}


def row_lookup(timeout: float) -> dict:
    result = _bench(["--quick", "--drafter", PromptLookup.kind], timeout)
    rows = result if isinstance(result, list) else result.get("rows", [result])
    return {"ok": True, "figures": {"speedup_vs_target_only": [r.get("speedup_vs_target_only") for r in rows
                                                                if isinstance(r, dict)]}}


def row_random_weights(preset: str, timeout: float) -> dict:
    result = _bench(["--preset", preset, "--random-weights"], timeout)
    graphs = result.get("graphs") or {}
    return {"ok": True, "figures": {"draft_ms": result.get("draft_ms"), "target_ms": result.get("target_ms"),
                                    "c": result.get("cost_ratio_c"), "draft_ms_graphs": graphs.get("draft_ms"),
                                    "target_ms_graphs": graphs.get("target_ms"), "c_graphs": graphs.get("cost_ratio_c")}}


def row_round(timeout: float, device: str = "cuda") -> dict:
    from .round_counts import round_counts

    return {"ok": True, "figures": round_counts(device, COUNTED_STEPS)}


ROWS = (("tests", 120, row_tests), ("rewind", 40, row_rewind), ("round", 30, row_round),
        ("bench graphs", 45, lambda t: row_bench(t, "1")), ("bench forwards", 45, lambda t: row_bench(t, "forwards")),
        ("bench eager", 45, lambda t: row_bench(t, "0")), (PromptLookup.kind, 40, row_lookup),
        ("smollm2 random weights", 60, lambda t: row_random_weights("smollm2", t)),
        ("qwen2.5 random weights", 60, lambda t: row_random_weights("qwen2.5", t)))


def run_gpucheck(budget_s: float = BUDGET_S, rows=ROWS) -> dict:
    """Every row in order, each within min(its cap, what is left of the budget)."""
    start, out = time.perf_counter(), []
    for name, cap, run in rows:
        left = budget_s - (time.perf_counter() - start)
        if left < 5:
            out.append({"check": name, "status": "not run: time budget", "figures": {}, "seconds": 0.0})
            continue
        _log(f"{name} (at most {min(cap, left):.0f} s)")
        t0 = time.perf_counter()
        try:
            result = run(min(cap, left))
            status = "ok" if result["ok"] else "failed"
        except subprocess.TimeoutExpired:
            result, status = {"figures": {}}, f"timed out after {min(cap, left):.0f} s"
        except Exception as err:  # a row's failure is its row's answer, not the end of the check
            result, status = {"figures": {}}, f"error: {str(err).splitlines()[0] if str(err) else type(err).__name__}"
        out.append({"check": name, "status": status, "figures": result["figures"],
                    "detail": result.get("detail") or None, "seconds": round(time.perf_counter() - t0, 1)})
    return {"rows": out, "total_s": round(time.perf_counter() - start, 1)}


def _flat(figures: dict, prefix: str = "") -> dict:
    """Nested figures (the round row's, per kind of step) as one level: 'round_traces_on.host_reads'."""
    out = {}
    for key, value in figures.items():
        out.update(_flat(value, f"{prefix}{key}.") if isinstance(value, dict) else {f"{prefix}{key}": value})
    return out


def table(result: dict) -> str:
    """One plain-text table: check, status, seconds, figures."""
    lines = [f"{'check':<24} {'status':<26} {'s':>6}  figures", "-" * 100]
    for row in result["rows"]:
        figures = ", ".join(f"{k} {v}" for k, v in _flat(row["figures"]).items())
        lines.append(f"{row['check']:<24} {row['status']:<26} {row['seconds']:>6}  {figures}")
    lines.append(f"total {result['total_s']} s")
    return "\n".join(lines)


CPU_ROWS = (("round", 120, lambda t: row_round(t, device="cpu")),)


def regions_gain(rows: list[dict]) -> float | None:
    """The speed-up with the round's two regions over the speed-up without them (each forward a graph, the decision
    eager): `bench graphs` over `bench forwards`, when both ran."""
    speedups = {row["check"]: row["figures"].get("speedup_vs_target_only") for row in rows}
    with_regions, without = speedups.get("bench graphs"), speedups.get("bench forwards")
    return round(with_regions / without, 3) if with_regions and without else None


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m specviz gpucheck",
                                 description="the CUDA checks a lent GPU should answer, in one table: the tests, the "
                                             "rewind chi-square, the round's counts (kernel launches outside graphs "
                                             "and graph replays per round and per step, host reads, operations "
                                             "outside the two regions, torch calls), bench with the round's regions, "
                                             "with per-forward graphs and eager (the speed-up with and without the "
                                             "regions), lookup, random-weights costs")
    ap.add_argument("--json", action="store_true", help="print JSON instead of the table")
    ap.add_argument("--budget-s", type=float, default=BUDGET_S,
                    help=f"total seconds for every row (default {BUDGET_S}; 30 to 3600)")
    ap.add_argument("--cpu", action="store_true",
                    help="without CUDA: run only the round row on the CPU (its CUDA-only figures say 'no CUDA')")
    args = ap.parse_args(argv)
    if not 30 <= args.budget_s <= 3600:
        print(f"error: --budget-s must be between 30 and 3600 seconds, got {args.budget_s}", file=sys.stderr)
        return 2
    import torch

    if args.cpu:
        result = {"device": "cpu", "torch": torch.__version__, **run_gpucheck(args.budget_s, CPU_ROWS)}
    elif not torch.cuda.is_available():
        print("error: gpucheck needs a CUDA device and torch sees none (torch.cuda.is_available() is False); "
              "--cpu runs the round's counts on the CPU", file=sys.stderr)
        return 2
    else:
        result = {"device": torch.cuda.get_device_name(0), "torch": torch.__version__, **run_gpucheck(args.budget_s)}
        result["speedup_regions_over_forwards"] = regions_gain(result["rows"])
    text = table(result)
    if result.get("speedup_regions_over_forwards") is not None:
        text += f"\nspeed-up with the round's regions over without: x{result['speedup_regions_over_forwards']}"
    print(json.dumps(result) if args.json else f"{result['device']}, torch {result['torch']}\n{text}")
    return 0 if all(row["status"] == "ok" for row in result["rows"]) else 1
