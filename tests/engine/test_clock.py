"""specviz.engine.serving.clock: timed forwards take one clock in arrival order, and no wait outlives its event."""
from __future__ import annotations

import threading
import time

import pytest

from specviz.engine.limits import EventTimeout, event_deadline
from specviz.engine.serving.clock import ClockBusy, FairClock


def _queue_up(clock: FairClock, name: str, order: list) -> threading.Thread:
    """A thread that waits for `clock`, notes its name once it holds it, and lets go; returns once it is queued."""
    queued = clock.waiting()

    def take():
        with clock:
            order.append(name)
    thread = threading.Thread(target=take)
    thread.start()
    deadline = time.monotonic() + 5
    while clock.waiting() == queued and time.monotonic() < deadline:
        time.sleep(0.005)
    return thread


def test_waiters_take_the_clock_in_the_order_they_came():
    clock, order = FairClock(), []
    clock.acquire()
    threads = [_queue_up(clock, name, order) for name in "abcd"]
    clock.release()
    for thread in threads:
        thread.join(5)
    assert order == list("abcd")


def test_a_holder_that_takes_it_again_at_once_goes_behind_a_waiter():
    clock, order = FairClock(), []
    clock.acquire()
    waiter = _queue_up(clock, "step", order)
    clock.release()
    with clock:  # a race's next slice, asked for right after its last one
        order.append("race")
    waiter.join(5)
    assert order == ["step", "race"]


def test_a_wait_past_the_events_deadline_ends_with_a_named_message_and_leaves_the_queue():
    clock = FairClock()
    clock.acquire()
    start = time.monotonic()
    with event_deadline(0.2), pytest.raises(ClockBusy, match=r"other visitors' timed forwards .* 0\.2 s .*"
                                                             r"\(SPECVIZ_EVENT_TIMEOUT_S\)"):
        with clock:
            pass
    assert 0.15 < time.monotonic() - start < 2.0
    assert clock.waiting() == 0
    assert issubclass(ClockBusy, EventTimeout)  # handled wherever an event's deadline is
    clock.release()
    assert clock.acquire(timeout=0)  # nobody is left queued in front


def test_outside_an_event_the_wait_has_no_limit():
    clock, order = FairClock(), []
    clock.acquire()
    waiter = _queue_up(clock, "late", order)
    time.sleep(0.3)
    assert order == [] and waiter.is_alive()
    clock.release()
    waiter.join(5)
    assert order == ["late"]
