"""One fair clock: the lock that timed forwards hold, taken first come first served, never past a deadline.

Within one process no two timed stretches overlap, so no visitor's figures are measured beside another's
forwards. Fairness needs two more things than a plain lock: a holder takes it for one round at most (a
Step's round and its baseline catch-up, one slice of a race), and waiters are served in the order they came
(a plain `threading.Lock` lets the thread that just released it take it straight back, so a race looping
over its slices could starve a Step). A waiter gives up when its event's deadline (`limits.remaining()`)
passes, with an `EventTimeout` that says what it waited for.
"""
from __future__ import annotations

import itertools
import threading
import time
from collections import deque

from .. import limits


class ClockBusy(limits.EventTimeout):
    """The event's time ran out while other visitors' timed forwards held the clock."""


class FairClock:
    """A lock taken in arrival order (a ticket queue), whose `with` waits at most the event's remaining time."""

    def __init__(self):
        self._cond = threading.Condition(threading.Lock())
        self._queue: deque[int] = deque()   # tickets of the waiters, in arrival order
        self._tickets = itertools.count()
        self._held = False

    def acquire(self, timeout: float | None = None) -> bool:
        """Take the clock once every earlier waiter has had it; False if `timeout` seconds pass first."""
        end = None if timeout is None else time.monotonic() + timeout
        with self._cond:
            ticket = next(self._tickets)
            self._queue.append(ticket)
            while self._held or self._queue[0] != ticket:
                left = None if end is None else end - time.monotonic()
                if left is not None and left <= 0:
                    self._queue.remove(ticket)
                    self._cond.notify_all()  # the next in line may be free to go now
                    return False
                self._cond.wait(left)
            self._queue.popleft()
            self._held = True
            return True

    def release(self) -> None:
        with self._cond:
            if not self._held:
                raise RuntimeError("release of a clock that is not held")
            self._held = False
            self._cond.notify_all()

    def waiting(self) -> int:
        """How many are queued for the clock now."""
        with self._cond:
            return len(self._queue)

    def locked(self) -> bool:
        with self._cond:
            return self._held

    def __enter__(self) -> FairClock:
        waited = limits.remaining()  # None outside an event: as long as it takes
        if not self.acquire(timeout=waited):
            raise ClockBusy(f"other visitors' timed forwards held the machine for the {limits.limit_s():g} s this "
                            "event may run (SPECVIZ_EVENT_TIMEOUT_S), so it was not started; nothing changed: try "
                            "again in a moment")
        return self

    def __exit__(self, *exc) -> None:
        self.release()


TIMED = FairClock()  # the process's one clock: held by a Step's round or a race's slice while its forwards are timed
