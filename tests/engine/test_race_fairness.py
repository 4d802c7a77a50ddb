"""A race under the event's deadline and beside other visitors: it stops between forwards, is planned from
measured costs, and never holds the machine for more than one slice."""
from __future__ import annotations

import threading
import time
from dataclasses import replace

import pytest

from specviz.core.config import DecodeConfig
from specviz.core.trace import StepRecord
from specviz.engine import limits
from specviz.engine.limits import EventTimeout, ServerBusy, event_deadline
from specviz.engine.models.presets import pair_ref
from specviz.engine.serving import costs, race
from specviz.engine.serving.clock import TIMED
from specviz.engine.serving.race import run_race
from specviz.engine.serving.run import RunSettings
from specviz.engine.settings import current as current_deployment

PROMPT = "KING.\nNow is the time"
SLOW_S = 0.1  # added to every target forward


def settings(**config) -> RunSettings:
    return RunSettings(pair=pair_ref("shakespeare"), prompt=PROMPT,
                       config=DecodeConfig(**{"gamma": 4, "max_new_tokens": 40, "seed": 5, **config}), device="cpu")


@pytest.fixture
def book(monkeypatch):
    """A cost book of this test's own: nothing measured before it."""
    fresh = costs.CostBook()
    monkeypatch.setattr(costs, "COSTS", fresh)
    return fresh


@pytest.fixture
def slow_target(pair):
    handle = pair.target.register_forward_pre_hook(lambda *_: time.sleep(SLOW_S))
    yield pair
    handle.remove()


def measured(book, pair, seconds_per_forward: float, gamma: int = 4) -> None:
    """The book as if every target forward had taken `seconds_per_forward` and every round emitted one token."""
    rounds = [StepRecord(gamma=gamma, n_accepted=0, n_examined=1, n_emitted=1, draft_s=0.0,
                         target_s=seconds_per_forward, step_s=seconds_per_forward)]
    book.record(costs.pair_key(pair), ("model", 1, gamma), target_s=[seconds_per_forward], rounds=rounds)


@pytest.mark.slow  # a race run past its deadline on a slowed target: seconds by design (8.5 s)
def test_a_race_past_its_deadline_stops_between_forwards_and_keeps_both_lanes(slow_target, book, monkeypatch):
    monkeypatch.setattr(race, "plan", lambda pair, config, left: (config.max_new_tokens, None))  # no capping: the deadline
    start = time.monotonic()
    with event_deadline(8.0):  # 200 tokens a side take 200 target-only forwards of SLOW_S or more: over 20 s
        stopped = run_race(settings(max_new_tokens=200), speculative_first=True)
    took = time.monotonic() - start
    assert stopped.stopped_s == 8.0
    assert 0 < len(stopped.target_only.texts) < 200 and 0 < len(stopped.speculative.texts) < 200
    # stopped at the next forward after the deadline: both lanes' own work fits in it but for the last forward,
    # and the event ends long before the whole race would have (a busy machine adds to the reading and clean-up)
    assert stopped.target_only.total_s + stopped.speculative.total_s < 8.0 + 1.0
    assert took < 14.0, took
    assert len(stopped.target_only.times_s) == len(stopped.target_only.texts)


def test_a_race_predicted_past_its_deadline_is_capped_to_the_tokens_that_fit(pair, book):
    # 1 s a target forward, one token a round: a token costs 2 s, the whole race 80 s; 0.85 x 40 s = 34 s fit 17
    measured(book, pair, 1.0)
    assert race.plan(pair, settings().config, 40.0) == (17, pytest.approx(80.0))
    assert race.plan(pair, settings().config, 100.0) == (40, pytest.approx(80.0))  # it fits: not cut
    with event_deadline(40.0):  # less is left once the prompt is read: 14 to 16 tokens
        capped = run_race(settings(), speculative_first=False)
    assert 14 <= capped.capped_to <= 16 and capped.predicted_s == pytest.approx(80.0) and not capped.stopped_s
    n = capped.capped_to
    assert len(capped.target_only.texts) == n and n <= len(capped.speculative.texts) <= n + 4


def test_a_race_that_cannot_fit_one_token_is_refused_naming_the_knobs_that_cost(pair, book):
    measured(book, pair, 10.0)
    with event_deadline(5.0), pytest.raises(EventTimeout, match=r"max_new_tokens 40 with gamma 4 and drafts 1 is "
                                                                  r"predicted to take 800 s.*SPECVIZ_EVENT_TIMEOUT_S"):
        run_race(settings(), speculative_first=True)


def _all_heavy_slots_taken(concurrency: int) -> bool:
    """Whether another event asking for a heavy slot now is told the server is busy (it never waits here)."""
    try:
        with event_deadline(1e-6), limits.heavy_slot(limits.HEAVY_TOKENS, concurrency):  # no wait for a slot
            return False
    except ServerBusy:
        return True
    except EventTimeout:  # admitted, but no slot came free at once: not all admissions are taken yet
        return False


def _hold_heavy_slots(release: threading.Event) -> list[threading.Thread]:
    """Events of heavy work until every admission is taken: one holds each heavy slot, the others wait for one."""
    concurrency = current_deployment().concurrency

    def hold():
        with limits.heavy_slot(limits.HEAVY_TOKENS, concurrency):
            release.wait(30)
    threads = [threading.Thread(target=hold) for _ in range(concurrency)]
    for thread in threads:
        thread.start()
    deadline = time.monotonic() + 10
    while not _all_heavy_slots_taken(concurrency):
        assert time.monotonic() < deadline, "the holding threads never took every heavy slot"
        time.sleep(0.01)
    return threads


@pytest.fixture
def heavy_slots_taken():
    release = threading.Event()
    threads = _hold_heavy_slots(release)
    yield
    release.set()
    for thread in threads:
        thread.join(30)


def test_a_race_predicted_short_needs_no_heavy_slot(pair, book, heavy_slots_taken):
    measured(book, pair, 0.01)  # 8 tokens predicted at 0.16 s: light
    short = run_race(settings(max_new_tokens=8), speculative_first=True)
    assert len(short.target_only.texts) == 8 and short.predicted_s < race.HEAVY_RACE_S


def test_a_race_predicted_long_is_told_other_races_are_busy_when_no_heavy_slot_is_free(pair, book, heavy_slots_taken):
    measured(book, pair, 100.0)  # 40 tokens predicted to take hours: heavy
    with pytest.raises(ServerBusy, match="other visitors' long races"):
        run_race(settings(), speculative_first=True)


LONG_PROMPT = "KING.\n" + "Now is the winter of our discontent. " * 4


@pytest.fixture
def long_prompts(monkeypatch, pair):
    """LONG_PROMPT counts as a long prompt (its prefill is heavy work): the bundled pair's context is shorter than
    the real threshold."""
    monkeypatch.setattr(limits, "HEAVY_TOKENS", 16)
    assert len(pair.encode(LONG_PROMPT)) >= limits.HEAVY_TOKENS


def test_a_race_with_a_long_prompt_and_no_heavy_slot_free_is_told_races_are_busy(long_prompts, book, heavy_slots_taken):
    with pytest.raises(ServerBusy, match="other visitors' long races"):
        run_race(replace(settings(), prompt=LONG_PROMPT), speculative_first=True)


def test_a_race_the_deadline_stops_while_it_waits_to_read_its_prompt_says_so(long_prompts, book):
    concurrency = current_deployment().concurrency
    holders = max(1, concurrency - 1)  # every heavy slot held, one admission left open (the race waits in it)
    if holders >= concurrency:
        pytest.skip("a deployment of one worker admits no event beside the one holding its slot")
    release, held = threading.Event(), threading.Barrier(holders + 1)

    def hold():
        with limits.heavy_slot(limits.HEAVY_TOKENS, concurrency):
            held.wait(10)
            release.wait(30)
    threads = [threading.Thread(target=hold) for _ in range(holders)]
    for thread in threads:
        thread.start()
    held.wait(10)
    try:
        with event_deadline(1.0), pytest.raises(EventTimeout, match=r"the race was stopped at the 1 s an event may run "
                                                                     r"\(SPECVIZ_EVENT_TIMEOUT_S\) before its lanes started"):
            run_race(replace(settings(), prompt=LONG_PROMPT), speculative_first=True)
    finally:
        release.set()
        for thread in threads:
            thread.join(30)


@pytest.mark.slow  # a race and a Step on a slowed target, timed slice by slice (6.2 s)
def test_a_step_waiting_for_the_clock_gets_it_between_two_slices_of_a_race(slow_target, book, monkeypatch):
    out, slices = {}, []

    def timed_slice(*args):
        start = time.monotonic()
        try:
            return slice_(*args)
        finally:
            slices.append(time.monotonic() - start)
    slice_ = race._slice
    monkeypatch.setattr(race, "_slice", timed_slice)
    racer = threading.Thread(target=lambda: out.update(race=run_race(settings(), speculative_first=True)))
    racer.start()
    deadline = time.monotonic() + 30
    while not TIMED.locked() and time.monotonic() < deadline:  # the race's first slice holds the clock
        time.sleep(0.005)
    start = time.monotonic()
    with event_deadline(60.0), TIMED:  # another visitor's Step
        waited = time.monotonic() - start
        done_then = len(slices)
    racer.join(120)
    assert "race" in out and len(out["race"].target_only.texts) == 40
    assert done_then < len(slices)  # the race went on after the Step: it had not run to its end first
    assert waited <= max(slices) + 0.2, (waited, slices)  # one slice at most (plus the thread's wake-up)
