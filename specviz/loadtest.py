"""`python -m specviz loadtest`: a class at once, through the public /step API, on this machine.

Starts the app on a free loopback port and, with distinct seeds per session:
  1. solo    each session alone, one after another: the reference tokens and solo Step latency;
  2. loaded  all sessions at once (one thread each): errors, Step latency, throughput, and whether
             every session's tokens equal its solo run's (isolation of state and random streams);
  3. pair    two sessions at once: the throughput a class of 30 is compared with;
  4. churn   sessions that connect, step and leave: the server's resident memory before and after.
Every request goes to 127.0.0.1 only; every loop is bounded.
"""
from __future__ import annotations

import os
import socket
import statistics
import sys
import threading
import time


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _rss_mib() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def _session(url: str, seed: int, steps: int, latencies: list, errors: list) -> list[int]:
    """One client: `steps` Steps with its own seed; returns the emitted token ids in order."""
    from gradio_client import Client

    client = Client(url, verbose=False)
    for _ in range(steps):
        t0 = time.perf_counter()
        try:
            client.predict(seed=seed, max_new_tokens=200, api_name="/step")
        except Exception as err:  # noqa: BLE001 - every failure is counted and reported
            errors.append(f"seed {seed}: {str(err).splitlines()[0][:200]}")
            return []
        latencies.append(time.perf_counter() - t0)
    traces = client.predict(api_name="/traces")[2]
    return [e["id"] for t in traces for e in t["emitted"]]


def _concurrent(url: str, seeds: list[int], steps: int) -> tuple[dict, list, list, float]:
    tokens, latencies, errors = {}, [], []

    def run(seed):
        tokens[seed] = _session(url, seed, steps, latencies, errors)
    threads = [threading.Thread(target=run, args=(s,)) for s in seeds]
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=1800)
    return tokens, latencies, errors, time.perf_counter() - t0


def _percentiles(latencies: list) -> dict:
    if not latencies:
        return {"p50_s": None, "p95_s": None}
    ordered = sorted(latencies)
    return {"p50_s": round(statistics.median(ordered), 3), "p95_s": round(ordered[int(0.95 * (len(ordered) - 1))], 3)}


def run_loadtest(sessions: int = 30, steps: int = 30, churn: int = 200, churn_steps: int = 5,
                 progress=sys.stderr) -> dict:
    for name, value, top in (("sessions", sessions, 200), ("steps", steps, 100), ("churn", churn, 1000)):
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= top or (name != "churn" and value < 1):
            raise ValueError(f"{name} must be a whole number in {0 if name == 'churn' else 1}..{top}, not {value!r}")
    os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
    from .models import default_preset, load_pair
    from .ui import MODEL_CONCURRENCY, build_app

    load_pair(default_preset())
    demo = build_app()
    demo.queue(default_concurrency_limit=MODEL_CONCURRENCY)
    _, url, _ = demo.launch(server_name="127.0.0.1", server_port=_free_port(), prevent_thread_lock=True, quiet=True)
    seeds = list(range(1000, 1000 + sessions))
    try:
        print(f"1. solo: {sessions} sessions x {steps} steps, one at a time", file=progress, flush=True)
        solo_tokens, solo_lat, solo_err = {}, [], []
        t0 = time.perf_counter()
        for seed in seeds:
            solo_tokens[seed] = _session(url, seed, steps, solo_lat, solo_err)
        solo_wall = time.perf_counter() - t0
        print(f"2. loaded: {sessions} sessions at once", file=progress, flush=True)
        tokens, lat, err, wall = _concurrent(url, seeds, steps)
        print("3. pair: 2 sessions at once", file=progress, flush=True)
        _, pair_lat, pair_err, pair_wall = _concurrent(url, seeds[:2], steps)
        print(f"4. churn: {churn} sessions of {churn_steps} steps that leave", file=progress, flush=True)
        rss_before = _rss_mib()
        churn_err = []
        for i in range(churn):
            _session(url, 5000 + i, churn_steps, [], churn_err)
        rss_after = _rss_mib()
    finally:
        demo.close()
    identical = sum(tokens.get(s) == solo_tokens[s] and bool(solo_tokens[s]) for s in seeds)
    return {
        "sessions": sessions, "steps": steps, "model_concurrency": MODEL_CONCURRENCY, "cpus": os.cpu_count(),
        "errors": len(solo_err) + len(err) + len(pair_err) + len(churn_err), "error_samples": (err + churn_err)[:5],
        "sessions_identical_to_solo": identical,
        "solo": {**_percentiles(solo_lat), "steps_per_s": round(len(solo_lat) / solo_wall, 2)},
        "loaded": {**_percentiles(lat), "steps_per_s": round(len(lat) / wall, 2)},
        "pair": {**_percentiles(pair_lat), "steps_per_s": round(len(pair_lat) / pair_wall, 2)},
        "throughput_loaded_over_pair": round((len(lat) / wall) / (len(pair_lat) / pair_wall), 3),
        "churn": {"sessions": churn, "steps_each": churn_steps, "rss_before_mib": round(rss_before, 1),
                  "rss_after_mib": round(rss_after, 1),
                  "mib_per_session": round((rss_after - rss_before) / churn, 3) if churn else None},
    }
