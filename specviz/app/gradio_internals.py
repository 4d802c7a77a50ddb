"""The one place that reaches into gradio's internals, pinned to the version it was checked against.

gradio keeps a closed tab's state for an hour whatever `time_to_live` says
(`SessionState.STATE_TTL_WHEN_CLOSED`), and no public API frees it sooner. `forget_tab` deletes it
through `Blocks.state_holder` (the session's gr.State, whose delete_callback frees the run) and drops
gradio's own copy of the page. tests/app/test_gradio_internals.py fails loudly when an upgrade
moves any of these attributes.
"""
from __future__ import annotations

import gradio as gr

CHECKED_AGAINST = "6.31.0"  # gradio's version when these attributes were read from its source


def forget_tab(demo: gr.Blocks, request: gr.Request) -> None:
    """A tab closed (its heartbeat ended): free its run and gradio's copy of its page now.
    Gradio alone would keep a closed tab's state for an hour, whatever its time_to_live."""
    holder = demo.state_holder
    holder.delete_state(request.session_hash)  # calls Session.release
    with holder.lock:
        holder.session_data.pop(request.session_hash, None)
        holder.time_last_used.pop(request.session_hash, None)
