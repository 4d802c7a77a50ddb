"""Serving the app: load the default pair, queue model-bound events, launch with the page's JS and CSS."""
from __future__ import annotations

import os
import sys
from pathlib import Path

import gradio as gr

from ..engine.models.loading import check_offer, load_pair
from ..engine.models.presets import ModelLoadError, default_preset
from ..engine.serving.threads import use_serving_threads
from ..engine.serving.zerogpu import load_offered_pairs
from ..engine.settings import current as current_deployment
from ..present.export_folders import remove_stale_exports
from ..present.palette import css_variables
from .gradio_internals import cache_dir, protect_sessions
from .handlers import QUEUE_STATUS_S, session_worth
from .layout import i18n
from .wiring import build_app

HERE = Path(__file__).resolve().parent
# launch(js=...) takes one function: the page's scripts, each a function of its own, run in turn
PAGE_JS = "() => {\n" + "".join(f"({(HERE / name).read_text(encoding='utf-8').strip()})();\n"
                               for name in ("show_me.js", "page.js")) + "}"
CSS = css_variables() + (HERE / "page.css").read_text(encoding="utf-8")


def _record_exposure(kwargs: dict) -> None:
    """launch(server_name=..., share=...) wins over the environment: write them where gradio and
    settings.py both read them, so "can others reach this server?" has one answer."""
    if kwargs.get("server_name"):
        os.environ["GRADIO_SERVER_NAME"] = str(kwargs["server_name"])
    if kwargs.get("share"):
        os.environ["GRADIO_SHARE"] = "True"


def launch(demo: gr.Blocks | None = None, **kwargs):
    """Load the default pair, build the page, serve it; returns gradio's (app, local_url, share_url)."""
    os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
    _record_exposure(kwargs)
    use_serving_threads()  # one core stays free for the web server and the browser: timings stay fair
    check_offer()  # offered pairs that would unload each other stop the server before it serves
    try:  # load the default pair (ZeroGPU: every offered one) on this thread, before the first visitor arrives;
        # a failure shows on the first Step
        load_offered_pairs() or load_pair(default_preset())
    except ModelLoadError as err:
        print(f"warning: {err}", file=sys.stderr)
    demo = demo or build_app()
    remove_stale_exports(cache_dir(demo))  # an earlier server's exports (stopped before its clean-up) are not served
    # 'auto' messages every queued visitor after every event: with 30 queued on 2 cores that cost
    # throughput (loadtest: 92-97% of the 2-session rate, against 98-99% with 1 s)
    demo.queue(default_concurrency_limit=current_deployment().concurrency, status_update_rate=QUEUE_STATUS_S)
    block = not kwargs.pop("prevent_thread_lock", False)
    served = demo.launch(js=PAGE_JS, css=CSS, i18n=i18n(), max_file_size="1mb", prevent_thread_lock=True,
                         state_session_capacity=current_deployment().session_capacity, **kwargs)
    protect_sessions(demo, session_worth)  # before the first visitor can be pushed out by anonymous calls
    if block:
        demo.block_thread()
    return served


