"""`loadtest --attacks`, the racers: visitors pressing Race over and over while another only steps.

A local server set up as a public Space (as `run_attacks`): 1, then 6 visitors race back to back with the
longest race allowed (the longest prompt, max_new_tokens 200, gamma 16, 8 drafts) for a while, and a light
visitor does a Step every few seconds meanwhile; then one visitor runs a series of the longest races.
It prints the light Step's median and max (queue included), how the races ended (completed, capped to fit
the deadline, stopped by it, refused as busy) and the server's resident memory before, at its peak and after.
"""
from __future__ import annotations

import json
import statistics
import sys
import threading
import time

from .cli_values import check_race_seconds
from .loadtest import RssPeak, Server, Visitor, _check, _once, _token_limit, run_attacks, run_loadtest
from .plain import plain_text

LIGHT_PROMPT = "KING.\nNow is the time"
ENDINGS = ("completed", "capped", "stopped", "unstarted", "busy", "other")  # how a race ended (`_ending`)
LONGEST = {"max_new_tokens": 200, "gamma": 16, "drafts": 8}  # the page's longest race; the prompt is the longest too


def _ending(message: str) -> str:
    """How a race ended, from the message under it."""
    if not message:
        return "completed"
    if "stopped between two forwards" in message:
        return "stopped"
    if "before its lanes started" in message:
        return "unstarted"
    if "of the" in message and "tokens asked for" in message:
        return "capped"
    if "long races" in message or "long prompts" in message:
        return "busy"
    return "other"


class Racer:
    """One visitor that races again as soon as its race ends, until told to stop."""

    def __init__(self, url: str, preset: str, prompt: str, race: dict):
        from gradio_client import Client

        self.client, self.preset, self.prompt, self.race = Client(url, verbose=False), preset, prompt, race
        self.endings: list[str] = []
        self.samples: list[str] = []  # messages of races that ended otherwise ("other")

    def race_once(self, seed: int) -> float:
        t0 = time.perf_counter()
        try:
            _, message = self.client.predict(preset=self.preset, prompt=self.prompt, seed=seed, api_name="/race",
                                             **self.race)
            text = plain_text(message).strip()
        except Exception as err:
            text = f"error: {str(err).splitlines()[0][:200]}"
        ending = _ending(text)
        self.endings.append(ending)
        if ending == "other":
            self.samples.append(text[:200])
        return time.perf_counter() - t0

    def until(self, stop: threading.Event) -> None:
        seed = 1
        while not stop.is_set():
            self.race_once(seed)
            seed += 1

    def close(self):
        self.client.close()


def _light_steps(visitor: Visitor, stop: threading.Event, every_s: float, out: list, lost: list) -> None:
    """A Step every `every_s` seconds, each on a new seed (a new run: no run ends midway), until `stop`."""
    seed = 100
    while not stop.wait(every_s):
        seconds, message = visitor.step(LIGHT_PROMPT, seed=seed)
        seed += 1
        refused = message.startswith("error") or "SPECVIZ_EVENT_TIMEOUT_S" in message or "try again" in message
        (lost if refused else out).append(seconds)


def _phase(url: str, heavy: str, light: str, prompt: str, racers: int, seconds: float, every_s: float) -> dict:
    """`racers` visitors race back to back for `seconds` while a light visitor steps every `every_s` s."""
    stop, light_s, lost = threading.Event(), [], []
    crowd = [Racer(url, heavy, prompt, LONGEST) for _ in range(racers)]  # every client connects before the clock
    stepper = Visitor(url, light)
    threads = [threading.Thread(target=r.until, args=(stop,)) for r in crowd]
    threads.append(threading.Thread(target=_light_steps, args=(stepper, stop, every_s, light_s, lost)))
    for t in threads:
        t.start()
    time.sleep(seconds)
    stop.set()
    for t in threads:
        t.join(timeout=900)
    endings = [e for r in crowd for e in r.endings]
    for client in [*crowd, stepper]:
        client.close()
    return {"racers": racers, "seconds": seconds, "light_steps": len(light_s), "light_lost": len(lost),
            "light_median_s": round(statistics.median(light_s), 3) if light_s else None,
            "light_max_s": round(max(light_s), 3) if light_s else None,
            **{f"races_{kind}": endings.count(kind) for kind in ENDINGS},
            "other_samples": [s for r in crowd for s in r.samples][:3]}


def run_racers(heavy: str = "smollm2-local", light: str = "shakespeare", racers: tuple = (1, 6), seconds: float = 120,
               series: int = 12, every_s: float = 5.0, env: dict | None = None, progress=None) -> dict:
    """The racers scenario against a local server set up as a public Space offering `light` and `heavy`."""
    progress = sys.stderr if progress is None else progress  # looked up now: a caller may have redirected it
    _check("series", series, 0, 100)
    offered = light if heavy == light else f"{light},{heavy}"
    space = {"SPACE_ID": "loadtest/specviz", "SPECVIZ_PRESET": light, "SPECVIZ_PRESETS": offered, **(env or {})}
    say = lambda text: print(text, file=progress, flush=True)
    out: dict = {"heavy_preset": heavy, "light_preset": light, "race": LONGEST}
    with Server(space) as server, RssPeak(server) as rss:
        say("1. warm-up: a light Step, the heavy pair loaded, the prompt token limit read from a refusal")
        _once(server.url, light, LIGHT_PROMPT)
        _, refusal = _once(server.url, heavy, "1234567890" * 2000)
        limit, overhead = _token_limit(refusal)
        prompt = "7" * (limit - overhead)  # the longest prompt allowed, with the chat template
        out["prompt_tokens"], out["rss_before_mib"] = limit, round(server.rss_mib(), 1)
        phases = []
        for n in racers:
            say(f"2. {n} racer(s) for {seconds:g} s, a light Step every {every_s:g} s")
            phases.append(_phase(server.url, heavy, light, prompt, n, seconds, every_s))
        out["phases"] = phases
        say(f"3. {series} of the longest races by one visitor, one after another")
        racer = Racer(server.url, heavy, prompt, LONGEST)
        out["series_s"] = [round(racer.race_once(seed), 2) for seed in range(series)]
        out["series_endings"] = racer.endings
        racer.close()
        time.sleep(1.0)  # the closed clients' sessions are freed in a background task
        out["rss_after_mib"] = round(server.rss_mib(), 1)
    out["rss_peak_mib"] = round(rss.peak, 1)
    return out


def racers_text(out: dict) -> str:
    """The scenario's figures as lines: per phase the light Step and the races' endings, then memory."""
    lines = [f"racers: {out['heavy_preset']} longest race ({out['prompt_tokens']}-token prompt, max_new_tokens 200, "
             f"gamma 16, 8 drafts); light Steps on {out['light_preset']}"]
    for p in out["phases"]:
        lines.append(f"  {p['racers']} racer(s), {p['seconds']:g} s: light Step median {p['light_median_s']} s, max "
                     f"{p['light_max_s']} s ({p['light_steps']} answered, {p['light_lost']} lost); races completed "
                     f"{p['races_completed']}, capped {p['races_capped']}, stopped {p['races_stopped']}, stopped before "
                     f"their lanes {p['races_unstarted']}, busy {p['races_busy']}, other {p['races_other']}")
    lines.append(f"  {len(out['series_s'])} longest races in a row: {out['series_s']} s")
    lines.append(f"  server RSS before {out['rss_before_mib']} MiB, peak {out['rss_peak_mib']} MiB, after "
                 f"{out['rss_after_mib']} MiB")
    return "\n".join(lines)


def race_against_bench(races: int = 10, progress=None) -> dict:
    """`races` races of the page's first settings (the default pair and its first example prompt, γ 4, T 0.5, seed
    35, 80 tokens) through the engine with the app's threads, the first side alternating, interleaved with three
    `bench --quick` runs (before the races, halfway, after; with torch's default threads, as the command runs):
    each race's speed-up over the median bench, and how many fall within 15% and 25% of it. The bench's own spread
    from run to run is as large as the goal, so one bench alone would decide more than the races."""
    progress = sys.stderr if progress is None else progress  # looked up now: a caller may have redirected it
    import torch

    from ..core.config import DecodeConfig
    from ..engine.models.presets import PRESETS, default_preset, pair_ref
    from ..engine.serving.race import run_race
    from ..engine.serving.run import RunSettings
    from ..engine.serving.threads import serving_threads
    from ..present.page_settings import DEFAULT_MAX_NEW_TOKENS, DEFAULT_SEED, DEFAULT_TEMPERATURE
    from .bench import run_bench

    _check("races", races, 1, 100)
    pair, bench_threads, threads = default_preset(), torch.get_num_threads(), serving_threads()
    settings = RunSettings(pair=pair_ref(pair), prompt=PRESETS[pair].examples[0],
                           config=DecodeConfig(gamma=4, temperature=DEFAULT_TEMPERATURE, seed=DEFAULT_SEED,
                                               max_new_tokens=DEFAULT_MAX_NEW_TOKENS))
    settings.load()
    benches, speedups, busy = [], [], []

    def bench(when: str) -> None:
        print(f"bench --quick ({when}), {bench_threads} thread(s)", file=progress, flush=True)
        torch.set_num_threads(bench_threads)
        benches.append(round(run_bench(preset=pair, quick=True)["speedup_vs_target_only"], 3))

    bench("before the races")
    for i in range(races):
        if i == races // 2:
            bench("halfway")
        torch.set_num_threads(threads)  # as the app serves: one core left to everything else
        print(f"race {i + 1} of {races}, {threads} thread(s)", file=progress, flush=True)
        race = run_race(settings, speculative_first=i % 2 == 0)
        speedups.append(round(race.speedup, 3))
        busy.append(None if race.others_busy_cores is None else round(race.others_busy_cores, 2))
    bench("after the races")
    reference = statistics.median(benches)
    ratios = [round(s / reference, 3) for s in speedups]
    return {"preset": pair, "bench_quick_speedup": round(reference, 3), "bench_quick_speedups": benches,
            "race_speedups": speedups, "race_over_bench": ratios,
            "within_15pct": sum(abs(r - 1) <= 0.15 for r in ratios), "within_25pct": sum(abs(r - 1) <= 0.25 for r in ratios),
            "others_busy_cores": busy, "threads": threads}


def cmd_loadtest(args) -> int:
    """`loadtest`: the command line's entry (cli.py parses its flags)."""
    if args.race_vs_bench is not None:
        result = race_against_bench(races=args.race_vs_bench)
        print(json.dumps(result) if args.json else "\n".join(f"{k:32s} {v}" for k, v in result.items()))
        return 0
    if args.attacks:
        check_race_seconds(args.race_seconds)
        result = run_attacks(alternations=args.alternations)
        racers = run_racers(seconds=args.race_seconds)
        text = "\n".join(f"{k:32s} {v}" for k, v in result.items()) + "\n" + racers_text(racers)
        print(json.dumps({**result, "racers": racers}) if args.json else text)
        return 0
    result = run_loadtest(sessions=args.sessions, steps=args.steps, churn=args.churn)
    print(json.dumps(result) if args.json else "\n".join(f"{k:32s} {v}" for k, v in result.items()))
    return 0 if result["errors"] == 0 else 1
