"""The one place that reaches into gradio's internals, pinned to the version it was checked against.

gradio 6.31 keeps every client's session in `StateHolder.session_data` (an OrderedDict, least recently
used first), at most `state_session_capacity` of them; past that, `StateHolder.update` drops the least
recently used without calling any gr.State's delete_callback. Every raw `POST /gradio_api/call/...` is a
session of its own, so anonymous calls could push out a visitor's run. `protect_sessions` replaces the
holder's `update` with one that evicts the session whose loss costs least (`worth`), least recently used
among equals, and frees it through its delete_callback.

gradio also keeps a closed tab's state for an hour whatever `time_to_live` says
(`SessionState.STATE_TTL_WHEN_CLOSED`), and no public API frees it sooner. `forget_tab` deletes it
through `Blocks.state_holder` (the session's gr.State, whose delete_callback frees the run) and drops
gradio's own copy of the page. tests/app/test_gradio_internals.py fails loudly when an upgrade
moves any of these attributes.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import gradio as gr

CHECKED_AGAINST = "6.31.0"  # gradio's version when these attributes were read from its source
MADE_ROOM = "Your earlier run was freed to make room for other visitors"


def forget_tab(demo: gr.Blocks, request: gr.Request) -> None:
    """A tab closed (its heartbeat ended): free its run and gradio's copy of its page now.
    Gradio alone would keep a closed tab's state for an hour, whatever its time_to_live."""
    holder = demo.state_holder
    holder.delete_state(request.session_hash)  # calls the State's delete_callback
    with holder.lock:
        holder.session_data.pop(request.session_hash, None)
        holder.time_last_used.pop(request.session_hash, None)


def cache_dir(demo: gr.Blocks) -> str:
    """The folder gradio serves files from without copying them (its upload and output cache)."""
    return str(demo.GRADIO_CACHE)


def _values(session_state) -> Iterable[Any]:
    return list(session_state.state_data.values())


def protect_sessions(demo: gr.Blocks, worth: Callable[[Iterable[Any]], int]) -> None:
    """Make the running app's StateHolder evict by `worth(state values)` first, recency second.

    1. The session just used moves to the most recent end, as in gradio.
    2. While more than `capacity` sessions are held, the victim is the least recently used session of
       the lowest worth (never the one just used); a scan stops at the first worth-0 session.
    3. The victim's gr.State values are freed through their delete_callback (gradio skips that), each
       told why (`freed_because`), outside the holder's lock."""
    holder = demo.state_holder

    def update(session_id: str) -> None:
        victims = []
        with holder.lock:
            if session_id in holder.session_data:                                   # 1.
                holder.session_data.move_to_end(session_id)
            while len(holder.session_data) > holder.capacity:                       # 2.
                best, best_worth = None, None
                for sid, state in holder.session_data.items():
                    if sid == session_id:
                        continue
                    w = worth(_values(state))
                    if best_worth is None or w < best_worth:
                        best, best_worth = sid, w
                        if w == 0:
                            break
                if best is None:
                    break
                victims.append(holder.session_data.pop(best))
                holder.time_last_used.pop(best, None)
        for state in victims:                                                       # 3.
            for component, value, _ in list(state.state_components):
                try:
                    value.freed_because = MADE_ROOM
                except AttributeError:
                    pass
                component.delete_callback(value)

    holder.update = update
