"""Timed CPU forwards start once the rest of the machine is quiet (or a short wait has passed).

A Step's forwards are timed from the moment its request arrives, and that is the moment the browser works
hardest: on the machine that serves the page (a classroom laptop, this 2-core test machine) chromium used
0.5 to 1.5 cores from about 70 to 300 ms after each click, exactly while the round and the baseline were
being timed, and the live speed-up read 1.2-1.5x where `bench` measured 1.6-1.8x (c 0.33 against 0.22:
a draft forward, many small operations, loses most when it shares the cores). So before the timed
stretch the engine reads the kernel's CPU counters (/proc/stat, Linux) and waits, at most `max_wait_s`,
until the other processes together use under `busy_cores` of a core. The timing itself is unchanged:
the wall time of the forwards, both sides alike. Where /proc/stat is missing it does not wait.
"""
from __future__ import annotations

import os
import time

HZ = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
WINDOW_S = 0.05    # CPU time is counted in ticks of 1/HZ s (10 ms): a window of 5 ticks a core
BUSY_CORES = 0.5   # the rest of the machine counts as quiet below half a core


def _ticks() -> tuple[int, int] | None:
    """(ticks the whole machine was busy, ticks this process ran) so far; None where Linux's /proc is missing."""
    try:
        with open("/proc/stat") as f:
            cpu = [int(x) for x in f.readline().split()[1:]]
        with open("/proc/self/stat") as f:
            own = f.read().rsplit(")", 1)[1].split()
    except (OSError, ValueError, IndexError):
        return None
    idle = cpu[3] + (cpu[4] if len(cpu) > 4 else 0)  # idle and iowait
    return sum(cpu[:8]) - idle, int(own[11]) + int(own[12])  # user..steal; this process's utime + stime


def others_busy_cores(window_s: float = WINDOW_S) -> float | None:
    """How many cores the other processes used over the next `window_s` seconds (None: cannot tell)."""
    before = _ticks()
    time.sleep(window_s)
    return others_busy_between(before, _ticks(), window_s)


def machine_ticks() -> tuple[int, int] | None:
    """A reading of the CPU counters, for `others_busy_between` (None where Linux's /proc is missing)."""
    return _ticks()


def others_busy_between(before, after, seconds: float) -> float | None:
    """How many cores the other processes used on average between two `machine_ticks()` readings `seconds` apart."""
    if before is None or after is None or seconds <= 0:
        return None
    busy, own = after[0] - before[0], after[1] - before[1]
    return max(busy - own, 0) / HZ / seconds


def wait_for_quiet(max_wait_s: float, busy_cores: float = BUSY_CORES) -> float:
    """Wait until the other processes use under `busy_cores` (at most `max_wait_s`); returns the seconds waited."""
    start = time.perf_counter()
    while time.perf_counter() - start < max_wait_s:
        load = others_busy_cores()
        if load is None or load < busy_cores:
            break
    return time.perf_counter() - start


QUIET_SHARE = 0.1  # of the event's remaining time, the most its quiet wait may take


def before_timed_forwards(device) -> float:
    """On a CPU, wait for a quiet machine (SPECVIZ_QUIET_WAIT_MS at most, and at most a tenth of the event's
    remaining time); a GPU's forwards do not wait. Called outside the fair clock, so the waits of several
    visitors overlap instead of queueing one behind another."""
    from ..limits import remaining
    from ..settings import current

    if getattr(device, "type", str(device)) != "cpu":
        return 0.0
    left = remaining()
    limit = current().quiet_wait_ms / 1000
    return wait_for_quiet(limit if left is None else min(limit, QUIET_SHARE * left))
