"""`python -m specviz loadtest`: a class at once, through the public /step API, on this machine.

Starts the app (`specviz.app.launch`, as `python app.py` does) in a server process of its own on a
free loopback port, and drives it from this process with gradio_client, one seed per session:
  1. solo    each session alone, one after another: the reference tokens and solo Step latency;
  2. pairs   the same sessions two at a time: the throughput a class is compared with (half of the
             pairs run before the class and half after it, so a drift of the machine's speed
             favours neither);
  3. loaded  all sessions at once: errors, Step latency, throughput, and whether every session's
             tokens equal its solo run's (isolation of state and random streams);
  4. churn   sessions that connect, step and leave (close, as a tab does): the server's resident
             memory, sampled as they go.
Sessions connect before the clock starts, so throughput counts Steps, not page loads. Every
request goes to 127.0.0.1 only; every wait is bounded.

`run_attacks` (`loadtest --attacks`) is the public-Space attack pass as a bounded scenario: a server
as a Space runs it (SPACE_ID set, two offered presets) and anonymous API clients that send a prompt of
20,000 digits, the longest prompt allowed, two of those at once beside a light visitor, two visitors of
different pairs in turn, and values of the wrong type; it reports each event's time, the light visitor's
latency and the server's peak resident memory.
"""
from __future__ import annotations

import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

from ..engine.settings import current as current_deployment
from .plain import plain_text

SERVER_START_S = 300  # loading the pair and starting gradio: seconds before giving up


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def rss_mib(pid: int) -> float:
    """Resident memory of process `pid`, MiB (Linux /proc)."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


class Server:
    """The app in a process of its own, on 127.0.0.1:port, stopped on exit."""

    def __init__(self, env: dict | None = None):
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}/"
        env = {**os.environ, **(env or {}), "GRADIO_SERVER_NAME": "127.0.0.1", "GRADIO_SERVER_PORT": str(self.port),
               "GRADIO_ANALYTICS_ENABLED": "False",
               "PYTHONPATH": os.pathsep.join([str(Path(__file__).resolve().parent.parent),
                                              os.environ.get("PYTHONPATH", "")])}
        self.log = tempfile.TemporaryFile()
        self.process = subprocess.Popen([sys.executable, "-c", "from specviz.app import launch; launch(quiet=True)"],
                                        env=env, stdout=self.log, stderr=subprocess.STDOUT)

    def __enter__(self) -> Server:
        deadline = time.monotonic() + SERVER_START_S
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                self.log.seek(0)
                tail = self.log.read().decode(errors="replace").strip().splitlines()[-1:] or [""]
                raise RuntimeError(f"the app exited with status {self.process.returncode} before serving: {tail[0]}")
            try:
                with urllib.request.urlopen(self.url, timeout=5) as r:
                    if r.status == 200:
                        return self
            except OSError:
                time.sleep(0.5)
        self.__exit__()
        raise RuntimeError(f"the app did not serve {self.url} within {SERVER_START_S} s")

    def rss_mib(self) -> float:
        return rss_mib(self.process.pid)

    def __exit__(self, *exc) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
        self.log.close()


class ClientSession:
    """One client with its own seed: connects, steps, reads its tokens back, leaves."""

    def __init__(self, url: str, seed: int):
        from gradio_client import Client

        self.seed, self.latencies, self.error = seed, [], None
        self.client = Client(url, verbose=False)

    def step(self, steps: int) -> None:
        for _ in range(steps):
            t0 = time.perf_counter()
            try:
                self.client.predict(seed=self.seed, max_new_tokens=200, api_name="/step")
            except Exception as err:  # every failure is counted and reported
                self.error = f"seed {self.seed}: {str(err).splitlines()[0][:200]}"
                return
            self.latencies.append(time.perf_counter() - t0)

    def leave(self) -> list[int]:
        """The emitted token ids, then close (the server sees the tab go)."""
        try:
            traces = [] if self.error else self.client.predict(api_name="/traces")[2]
            return [e["id"] for t in traces for e in t["emitted"]]
        finally:
            self.client.close()


def _together(url: str, seeds: list[int], steps: int) -> tuple[list[ClientSession], float]:
    """Sessions connect, then all step at once; returns them and the stepping wall time."""
    sessions = [ClientSession(url, seed) for seed in seeds]
    threads = [threading.Thread(target=s.step, args=(steps,)) for s in sessions]
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=3600)
    return sessions, time.perf_counter() - t0


def _percentiles(latencies: list) -> dict:
    if not latencies:
        return {"p50_s": None, "p95_s": None}
    ordered = sorted(latencies)
    return {"p50_s": round(statistics.median(ordered), 3), "p95_s": round(ordered[int(0.95 * (len(ordered) - 1))], 3)}


def _summary(sessions: list[ClientSession], wall: float) -> dict:
    latencies = [x for s in sessions for x in s.latencies]
    return {**_percentiles(latencies), "steps": len(latencies), "steps_per_s": round(len(latencies) / wall, 2)}


def _check(name: str, value, low: int, high: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ValueError(f"{name} must be a whole number in {low}..{high}, not {value!r}")


def run_loadtest(sessions: int = 30, steps: int = 30, churn: int = 200, churn_steps: int = 5,
                 progress=None) -> dict:
    progress = sys.stderr if progress is None else progress  # looked up now: a caller may have redirected it
    _check("sessions", sessions, 2, 200)
    _check("steps", steps, 1, 100)
    _check("churn", churn, 0, 1000)
    seeds = list(range(1000, 1000 + sessions))
    pairs = [seeds[i:i + 2] for i in range(0, sessions, 2)]
    errors, solo, paired, loaded = [], [], [], []
    pair_wall = 0.0
    with Server() as server:
        print(f"1. solo: {sessions} sessions x {steps} steps, one at a time", file=progress, flush=True)
        solo_tokens, solo_wall = {}, 0.0
        for seed in seeds:
            (s,), wall = _together(server.url, [seed], steps)
            solo_wall += wall
            solo.append(s)
            solo_tokens[seed] = s.leave()
        print(f"2. pairs: the same sessions two at a time ({len(pairs)} pairs, half now, half after 3)",
              file=progress, flush=True)

        def run_pairs(chunk):
            nonlocal pair_wall
            for pair in chunk:
                group, wall = _together(server.url, pair, steps)
                pair_wall += wall
                paired.extend(group)
                for s in group:
                    s.leave()
        run_pairs(pairs[: len(pairs) // 2])
        print(f"3. loaded: {sessions} sessions at once", file=progress, flush=True)
        loaded, loaded_wall = _together(server.url, seeds, steps)
        tokens = {s.seed: s.leave() for s in loaded}
        run_pairs(pairs[len(pairs) // 2:])
        print(f"4. churn: {churn} sessions of {churn_steps} steps that leave", file=progress, flush=True)
        rss_samples = [round(server.rss_mib(), 1)]
        for i in range(churn):
            (s,), _ = _together(server.url, [5000 + i], churn_steps)
            s.leave()
            errors += [s.error] if s.error else []
            if (i + 1) % 25 == 0 or i + 1 == churn:
                time.sleep(1.0)  # the server frees a closed tab in a background task after its heartbeat ends
                rss_samples.append(round(server.rss_mib(), 1))
    errors += [s.error for s in solo + paired + loaded if s.error]
    identical = sum(tokens.get(seed) == solo_tokens[seed] and bool(solo_tokens[seed]) for seed in seeds)
    pair_summary, loaded_summary = _summary(paired, pair_wall), _summary(loaded, loaded_wall)
    return {
        "sessions": sessions, "steps": steps, "model_concurrency": current_deployment().concurrency, "cpus": os.cpu_count(),
        "errors": len(errors), "error_samples": errors[:5],
        "sessions_identical_to_solo": identical,
        "solo": _summary(solo, solo_wall), "pair": pair_summary, "loaded": loaded_summary,
        "throughput_loaded_over_pair": round(loaded_summary["steps_per_s"] / pair_summary["steps_per_s"], 3),
        "churn": {"sessions": churn, "steps_each": churn_steps, "rss_mib": rss_samples,
                  "rss_before_mib": rss_samples[0], "rss_after_mib": rss_samples[-1],
                  "rss_max_mib": max(rss_samples),
                  "mib_per_session": round((rss_samples[-1] - rss_samples[0]) / churn, 3) if churn else None},
    }


# ------------------------------------------------------------------ the attack scenario

MESSAGE = 9  # /step's outputs through gradio_client (the session is dropped): the message is the 10th


class RssPeak:
    """The server's resident memory, sampled every 0.2 s in a thread of its own while the block runs."""

    def __init__(self, server: Server):
        self.server, self.peak, self._stop = server, server.rss_mib(), threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def _sample(self):
        while not self._stop.wait(0.2):
            try:
                self.peak = max(self.peak, self.server.rss_mib())
            except OSError:
                return

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join(5)


class Visitor:
    """One anonymous API client; `step` returns (seconds, the message shown)."""

    def __init__(self, url: str, preset: str):
        from gradio_client import Client

        self.client, self.preset = Client(url, verbose=False), preset

    def step(self, prompt: str, **values) -> tuple[float, str]:
        t0 = time.perf_counter()
        try:
            values = {"max_new_tokens": 20, **values}
            out = self.client.predict(preset=self.preset, prompt=prompt, api_name="/step", **values)
            text = plain_text(out[MESSAGE])
        except Exception as err:  # an error is a result here: it is reported
            text = f"error: {str(err).splitlines()[0][:200]}"
        return round(time.perf_counter() - t0, 3), text.strip()

    def close(self):
        self.client.close()


def _once(url: str, preset: str, prompt: str, **values) -> tuple[float, str]:
    """A new visitor's first Step (a session of its own), then it leaves."""
    visitor = Visitor(url, preset)
    try:
        return visitor.step(prompt, **values)
    finally:
        visitor.close()


def _in_threads(calls) -> list:
    """Run each call in a thread of its own, all at once; their results in order (each bounded by its client)."""
    results = [None] * len(calls)

    def run(i, call):
        results[i] = call()
    threads = [threading.Thread(target=run, args=(i, c)) for i, c in enumerate(calls)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=900)
    return results


def run_attacks(heavy: str = "smollm2-local", light: str = "shakespeare", alternations: int = 5,
                env: dict | None = None, progress=None) -> dict:
    """The attack pass against a local server set up as a public Space offering `light` and `heavy`."""
    progress = sys.stderr if progress is None else progress  # looked up now: a caller may have redirected it
    _check("alternations", alternations, 1, 50)
    space = {"SPACE_ID": "loadtest/specviz", "SPECVIZ_PRESET": light, "SPECVIZ_PRESETS": f"{light},{heavy}", **(env or {})}
    say = lambda text: print(text, file=progress, flush=True)
    out: dict = {"heavy_preset": heavy, "light_preset": light}
    with Server(space) as server, RssPeak(server) as rss:
        out["rss_start_mib"] = round(server.rss_mib(), 1)
        say("1. warm-up: a light Step, and the heavy pair loaded by a short prompt")
        out["light_first_s"], _ = _once(server.url, light, "KING.\nNow is the time")
        out["heavy_load_s"], _ = _once(server.url, heavy, "Why is the sky blue?")
        say("2. a prompt of 20,000 digits (one token each)")
        out["digits_s"], out["digits_message"] = _once(server.url, heavy, "1234567890" * 2000)
        limit, overhead = _token_limit(out["digits_message"])
        out["prompt_token_limit"] = limit
        longest = lambda digit: digit * (limit - overhead)  # exactly the limit, with the template
        say(f"3. the longest prompt allowed ({limit} tokens), alone")
        out["longest_s"], out["longest_message"] = _once(server.url, heavy, longest("7"))
        say("4. two of those at once, and a light visitor's Steps meanwhile")
        light_visitor = Visitor(server.url, light)

        def light_steps():
            time.sleep(0.5)  # the heavy ones are in
            return [light_visitor.step("KING.\nNow is the time")[0] for _ in range(3)]
        first, second, light_s = _in_threads([lambda: _once(server.url, heavy, longest("3")),
                                              lambda: _once(server.url, heavy, longest("5")), light_steps])
        out.update(two_heavy_s=[first[0], second[0]], two_heavy_messages=[first[1], second[1]],
                   light_under_load_s=light_s)
        say(f"5. visitors of the two pairs in turn, {alternations} Steps each")
        a, b = Visitor(server.url, heavy), Visitor(server.url, light)
        turns = [(a.step(longest("9"), max_new_tokens=200), b.step("KING.\nNow is the time", max_new_tokens=200))
                 for _ in range(alternations)]
        out["alternating_heavy_s"] = [t[0][0] for t in turns]
        out["alternating_light_s"] = [t[1][0] for t in turns]
        out["alternating_rebuilds"] = sum("rebuilt" in m for (_, m), _ in turns[1:])
        for visitor in (light_visitor, a, b):
            visitor.close()
        say("6. values of the wrong type")
        out["bad_lang"] = [_once(server.url, light, "KING.", lang=value)[1] for value in (["en"], {"a": 1})]
        out["rss_end_mib"] = round(server.rss_mib(), 1)
    out["rss_peak_mib"] = round(rss.peak, 1)
    return out


def _token_limit(message: str) -> tuple[int, int]:
    """(the limit, the prompt's tokens beyond its 20,000 digits) from the refusal of the 20,000-digit prompt."""
    import re

    found = re.search(r"the prompt is ([\d,]+) tokens for this pair; the limit is ([\d,]+) tokens", message)
    if not found:
        raise RuntimeError(f"the 20,000-digit prompt was not refused by its token count: {message[:200]!r}")
    tokens, limit = (int(x.replace(",", "")) for x in found.groups())
    return limit, tokens - 20_000
