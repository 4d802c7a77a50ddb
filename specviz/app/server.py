"""Serving the app: load the default pair, queue model-bound events, launch with the page's JS and CSS."""
from __future__ import annotations

import os
from pathlib import Path

import gradio as gr

from ..engine.loading import load_pair
from ..engine.presets import ModelLoadError, default_preset
from ..engine.settings import current as current_deployment
from .handlers import QUEUE_STATUS_S, SESSION_CAPACITY
from .wiring import build_app

HERE = Path(__file__).resolve().parent
PAGE_JS = (HERE / "page.js").read_text(encoding="utf-8")
CSS = (HERE / "page.css").read_text(encoding="utf-8")


def launch(demo: gr.Blocks | None = None, **kwargs):
    os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
    try:  # load the default pair before the first visitor arrives; a failure shows on the first Step
        load_pair(default_preset())
    except ModelLoadError as err:
        print(f"warning: {err}")
    demo = demo or build_app()
    # 'auto' messages every queued visitor after every event: with 30 queued on 2 cores that cost
    # throughput (loadtest: 92-97% of the 2-session rate, against 98-99% with 1 s)
    demo.queue(default_concurrency_limit=current_deployment().concurrency, status_update_rate=QUEUE_STATUS_S)
    return demo.launch(js=PAGE_JS, css=CSS, max_file_size="1mb", state_session_capacity=SESSION_CAPACITY, **kwargs)


