"""A time limit per model-bound event, and heavy work that never takes every worker."""
from __future__ import annotations

import threading
import time

import pytest

from specviz.core.config import DecodeConfig
from specviz.engine import limits
from specviz.engine.limits import EventTimeout, HeavySlots, ServerBusy, event_deadline
from specviz.engine.models.presets import pair_ref
from specviz.engine.serving.run import ComparedRun, RunSettings, WarmRuns
from specviz.present.views import Session, step_session

LONG = "KING.\nNow is the winter of our discontent made glorious summer by this sun of York. " * 12


def _settings(prompt: str, seed: int = 4) -> RunSettings:
    return RunSettings(pair=pair_ref("shakespeare"), prompt=prompt,
                       config=DecodeConfig(gamma=4, max_new_tokens=30, seed=seed), device="cpu")


def test_past_its_deadline_an_event_ends_with_a_named_message():
    with event_deadline(0.01):
        time.sleep(0.02)
        with pytest.raises(EventTimeout, match=r"longer than 0\.01 s \(SPECVIZ_EVENT_TIMEOUT_S\)"):
            limits.check()
    limits.check()  # outside the event: no limit


@pytest.fixture
def slow_target(pair, monkeypatch):
    """Every target forward takes 30 ms more, and long prefills run in chunks of 16 tokens."""
    monkeypatch.setattr(limits, "PREFILL_CHUNK", 16)
    handle = pair.target.register_forward_pre_hook(lambda *_: time.sleep(0.03))
    yield pair
    handle.remove()


def test_a_prefill_past_the_deadline_stops_and_the_sessions_run_stays_usable(slow_target):
    session = Session()
    step_session(session, _settings("KING.\nNow is the time"))
    before = session.run
    with event_deadline(0.1), pytest.raises(EventTimeout):
        step_session(session, _settings(LONG))  # a new run: its prefill runs out of time
    assert session.run is before and len(before.traces) == 1
    step_session(session, before.settings)
    assert len(before.traces) == 2


def test_a_rebuild_past_the_deadline_leaves_the_run_hibernated_and_exact(slow_target):
    reference = ComparedRun(_settings(LONG), stateless=False, warm=WarmRuns(4))
    run = ComparedRun(_settings(LONG), stateless=False, warm=WarmRuns(4))
    reference.step(), run.step()
    run.hibernate()
    with event_deadline(0.1), pytest.raises(EventTimeout):
        run.step()
    assert not run.warm and len(run.traces) == 1
    reference.step(), run.step()
    assert run.tokens == reference.tokens


def _hold(slots: HeavySlots, tokens: int, entered: threading.Event, release: threading.Event, errors: list):
    try:
        with slots(tokens):
            entered.set()
            release.wait(10)
    except ServerBusy as err:
        errors.append(err)
        entered.set()


def test_heavy_work_takes_a_slot_and_an_event_beyond_the_admitted_is_told_the_server_is_busy():
    slots, release, errors = HeavySlots(running=1, admitted=2), threading.Event(), []
    first, second = threading.Event(), threading.Event()
    threads = [threading.Thread(target=_hold, args=(slots, limits.HEAVY_TOKENS, first, release, errors)),
               threading.Thread(target=_hold, args=(slots, limits.HEAVY_TOKENS, second, release, errors))]
    threads[0].start()
    assert first.wait(5)
    threads[1].start()
    assert not second.wait(0.2)  # admitted, waiting for the one running slot
    with pytest.raises(ServerBusy, match="try again in a few seconds"):
        with slots(limits.HEAVY_TOKENS):
            pass
    with slots(limits.HEAVY_TOKENS - 1):  # light work never waits
        pass
    release.set()
    for t in threads:
        t.join(5)
    assert second.is_set() and not errors


def test_waiting_for_a_heavy_slot_counts_against_the_deadline():
    slots, release, errors, entered = HeavySlots(running=1, admitted=2), threading.Event(), [], threading.Event()
    holder = threading.Thread(target=_hold, args=(slots, limits.HEAVY_TOKENS, entered, release, errors))
    holder.start()
    assert entered.wait(5)
    with event_deadline(0.1), pytest.raises(EventTimeout):
        with slots(limits.HEAVY_TOKENS):
            pass
    release.set()
    holder.join(5)


def test_a_thread_holding_a_heavy_slot_runs_its_own_long_forwards_in_it():
    """A race holds a slot for both of its decodes; the long prefills inside must not wait for a second one."""
    import threading

    from specviz.engine.limits import HEAVY_TOKENS, HeavySlots

    slots, done = HeavySlots(running=1, admitted=2), threading.Event()

    def nested():
        with slots(HEAVY_TOKENS), slots(HEAVY_TOKENS + 1):
            done.set()

    worker = threading.Thread(target=nested, daemon=True)
    worker.start()
    worker.join(timeout=10)
    assert done.is_set()
    with slots(HEAVY_TOKENS):  # and the slot was given back
        pass
