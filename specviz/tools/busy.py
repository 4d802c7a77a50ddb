"""A timing command (bench, report) says when the machine was busy while it ran.

Its ratios come from interleaved runs, so a busy moment slows both sides alike; but a draft forward, many small
operations, loses more than a target forward when it shares the cores (engine/serving/quiet.py), so c and the
speed-up drift, and a reader comparing two runs should know which one ran beside something else. The kernel's CPU
counters say how many cores the other processes used meanwhile (Linux; elsewhere nothing is said).
"""
from __future__ import annotations

import os
import sys
import time

from ..engine.serving.quiet import BUSY_CORES, machine_ticks, others_busy_between


def busy_warning(cores: float | None, command: str) -> str | None:
    """The stderr line for `cores` used by other processes while `command` ran (None below BUSY_CORES)."""
    if cores is None or cores < BUSY_CORES:
        return None
    return (f"warning: other processes used {cores:.1f} of this machine's {os.cpu_count()} cores on average while "
            f"this {command} ran: its timings (c most) may be off; rerun it on a quiet machine")


def times_the_machine(args) -> bool:
    """bench, and report where it runs the models (not one reading a trace file or a server's metrics)."""
    return args.command == "bench" or (args.command == "report" and not getattr(args, "from_traces", None)
                                       and not getattr(args, "from_metrics", None))


def metered(command, args) -> int:
    """Run `command(args)`; afterwards say on stderr when the rest of the machine was busy meanwhile."""
    start, before = time.perf_counter(), machine_ticks()
    status = command(args)
    warning = busy_warning(others_busy_between(before, machine_ticks(), time.perf_counter() - start), args.command)
    if warning:
        print(warning, file=sys.stderr)
    return status
