"""Timing a round without waiting for the device: CUDA events on CUDA, `time.perf_counter` elsewhere.

On a GPU the host runs ahead of the device, so a host clock read after queuing work measures the queuing,
not the work; the usual fix, `torch.cuda.synchronize()` around each timed section, stalls the pipeline
at every section (two syncs a round). A CUDA event is recorded in the stream instead and read later:
`Timer.read()` waits once, on the last event, for every interval recorded since the previous read (a round
that ends in a host read has already waited, so reading then costs nothing more). On the CPU the work is
done when the call returns, and `perf_counter` is the clock.
"""
from __future__ import annotations

import time

import torch


class Timer:
    """Named intervals on `device`'s clock, summed per name and read back all at once."""

    def __init__(self, device: torch.device | str):
        self.cuda = str(device).startswith("cuda") and torch.cuda.is_available()
        self._pending: list[tuple[str, object, object]] = []

    def mark(self):
        """A point in time: a recorded CUDA event (nothing waits), or perf_counter's seconds."""
        if self.cuda:
            event = torch.cuda.Event(enable_timing=True)
            event.record()
            return event
        return time.perf_counter()

    def add(self, name: str, start, end) -> None:
        """Keep the interval from `start` to `end` (two marks) under `name`, unread."""
        self._pending.append((name, start, end))

    def read(self) -> dict[str, float]:
        """Milliseconds per name since the last read, summed; on CUDA, one wait for the last recorded event."""
        totals: dict[str, float] = {}
        if self.cuda and self._pending:
            self._pending[-1][2].synchronize()  # events complete in stream order: the last one covers all
        for name, start, end in self._pending:
            totals[name] = totals.get(name, 0.0) + elapsed_ms(start, end)
        self._pending.clear()
        return totals


def elapsed_ms(start, end) -> float:
    """Milliseconds between two marks of one Timer (CUDA events must have completed: see `Timer.read`)."""
    if isinstance(start, float):
        return (end - start) * 1000.0
    return start.elapsed_time(end)
