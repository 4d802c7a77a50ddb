"""How long one model-bound event may run, and how many heavy ones may run at once.

A deadline. The app opens `event_deadline(seconds)` around each model-bound event (SPECVIZ_EVENT_TIMEOUT_S);
long forwards (a prefill, a sweep's context) run in chunks of PREFILL_CHUNK tokens and call `check()`
between them, so an event past its time ends with `EventTimeout`, a named message, and whatever it was
building is dropped: the run stays as it was before the event. The deadline is the calling thread's own
(one event per worker thread), never shared between visitors.

Heavy work. A forward over HEAVY_TOKENS tokens or more (a long prompt's prefill, a rebuild after
hibernation, a sweep) takes a `heavy_slot`: at most `running` such forwards at once, and at most
`admitted` events holding or waiting for one; an event beyond that is told the server is busy at once
rather than holding a worker. With gradio's model queue one worker wider than `admitted`, a light Step
always finds a worker and a core while heavy ones run.
"""
from __future__ import annotations

import contextlib
import threading
import time

PREFILL_CHUNK = 256   # tokens per forward of a long prefill: the deadline is checked between chunks
HEAVY_TOKENS = 256    # a forward over this many tokens or more is heavy work


class EventTimeout(ValueError):
    """A model-bound event ran past SPECVIZ_EVENT_TIMEOUT_S and was stopped between two forwards."""


class ServerBusy(ValueError):
    """Every slot for heavy work is taken: the visitor is asked to try again rather than wait in a worker."""


_local = threading.local()


@contextlib.contextmanager
def event_deadline(seconds: float | None):
    """Within this block, `check()` raises EventTimeout once `seconds` have passed (None: no limit)."""
    saved = getattr(_local, "deadline", None)
    _local.deadline = (time.monotonic() + seconds, seconds) if seconds else None
    try:
        yield
    finally:
        _local.deadline = saved


def remaining() -> float | None:
    """Seconds left to the current event (None: no limit)."""
    deadline = getattr(_local, "deadline", None)
    return None if deadline is None else max(0.0, deadline[0] - time.monotonic())


def limit_s() -> float:
    """The current event's time limit in seconds (0: no limit)."""
    deadline = getattr(_local, "deadline", None)
    return 0.0 if deadline is None else deadline[1]


def check() -> None:
    deadline = getattr(_local, "deadline", None)
    if deadline is not None and time.monotonic() > deadline[0]:
        raise EventTimeout(f"this event took longer than {deadline[1]:g} s (SPECVIZ_EVENT_TIMEOUT_S) and was "
                           "stopped; your run is as it was before it: try a shorter prompt")


LONG_PROMPTS = ("the server is reading other visitors' long prompts right now; try again in a few seconds, or use a "
                "shorter prompt")


class HeavySlots:
    """At most `running` heavy forwards at once, and at most `admitted` events holding or awaiting one."""

    def __init__(self, running: int, admitted: int):
        self.running, self.admitted = running, admitted
        self._running = threading.BoundedSemaphore(running)
        self._admitted = threading.BoundedSemaphore(admitted)
        self._holding = threading.local()  # a thread holding a slot (a race) runs its own long prefills in it

    @contextlib.contextmanager
    def __call__(self, tokens: int, busy: str = LONG_PROMPTS):
        """A slot for `tokens` tokens of work (none below HEAVY_TOKENS); ServerBusy(`busy`) when none is free."""
        if tokens < HEAVY_TOKENS or getattr(self._holding, "slot", False):
            yield
            return
        if not self._admitted.acquire(blocking=False):
            raise ServerBusy(busy)
        try:
            if not self._running.acquire(timeout=remaining()):  # None: as long as it takes
                check()  # the wait used up the event's time
                raise EventTimeout("no slot for a long prompt came free in time (SPECVIZ_EVENT_TIMEOUT_S)")
            self._holding.slot = True
            try:
                yield
            finally:
                self._holding.slot = False
                self._running.release()
        finally:
            self._admitted.release()


_SLOTS: dict[int, HeavySlots] = {}
_SLOTS_LOCK = threading.Lock()


@contextlib.contextmanager
def said_busy(message: str):
    """Within this block, a heavy slot refused without a message of its own says `message` (a race reading its
    long prompt is refused as a race, not as a prompt)."""
    saved = getattr(_local, "busy", None)
    _local.busy = message
    try:
        yield
    finally:
        _local.busy = saved


def heavy_slot(tokens: int, concurrency: int, busy: str | None = None):
    """The process's heavy slots for a deployment of `concurrency` model workers: one heavy forward fewer than
    the workers (at least one), as many events admitted as workers."""
    with _SLOTS_LOCK:
        slots = _SLOTS.get(concurrency)
        if slots is None:
            slots = _SLOTS[concurrency] = HeavySlots(max(1, concurrency - 1), concurrency)
    return slots(tokens, busy or getattr(_local, "busy", None) or LONG_PROMPTS)
