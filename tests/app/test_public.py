"""The app served as on a public Space (runs outlive anonymous traffic, the disk stays bounded, every bad
value is named, nothing leaks from the server): a server of `specviz.app.launch` on a
loopback port, driven with raw HTTP and gradio_client, every loop bounded."""
from __future__ import annotations

import html
import json
import os
import re
import time
from pathlib import Path

import httpx
import pytest

CAPACITY = 20       # sessions gradio keeps here (1000 by default): the flood below is 3x this
FLOOD = 3 * CAPACITY


@pytest.fixture(scope="module")
def served(pair):
    """(the app's Blocks, its URL), launched as `python app.py` does, with a small session capacity."""
    from specviz.app.server import launch
    from specviz.app.wiring import build_app
    from specviz.tools.loadtest import _free_port

    saved = {k: os.environ.get(k) for k in ("SPECVIZ_SESSION_CAPACITY", "GRADIO_SERVER_NAME")}
    os.environ["SPECVIZ_SESSION_CAPACITY"] = str(CAPACITY)
    demo = build_app()
    _, url, _ = launch(demo, server_name="127.0.0.1", server_port=_free_port(), prevent_thread_lock=True, quiet=True)
    yield demo, url
    demo.close()
    for k, v in saved.items():
        os.environ.pop(k, None) if v is None else os.environ.__setitem__(k, v)


def call(url: str, api: str, body: str) -> tuple[str, object]:
    """One raw `POST /gradio_api/call/API` (a session of its own, as anyone can send) and its result:
    ("complete", outputs) or ("error", message)."""
    r = httpx.post(f"{url}gradio_api/call/{api}", content=body, headers={"content-type": "application/json"},
                   timeout=60)
    if r.status_code != 200:
        return "refused", r.text
    stream = httpx.get(f"{url}gradio_api/call/{api}/{r.json()['event_id']}", timeout=120).text
    event = re.findall(r"^event: (\w+)", stream, re.M)[-1]
    data = json.loads(re.findall(r"^data: (.*)$", stream, re.M)[-1])
    return event, (data.get("error") if isinstance(data, dict) else data)


def published_step_parameters() -> tuple[str, ...]:
    """/step's parameters in the order docs/architecture.md publishes them (the contract), read from its text:
    the names in backquotes, with what the parentheses say about each left out."""
    text = (Path(__file__).resolve().parents[2] / "docs" / "architecture.md").read_text(encoding="utf-8")
    part = text.split("`/step` (parameters ", 1)[1].split("every one with the page's default", 1)[0]
    while re.search(r"\([^()]*\)", part):
        part = re.sub(r"\([^()]*\)", "", part)
    return tuple(re.findall(r"`(\w+)`", part))


PUBLISHED = published_step_parameters()


@pytest.fixture(scope="module")
def step_body(page_settings):
    """step_body(**change): a raw /step body, every value by name from the page's settings, in PUBLISHED order."""
    def body(**change) -> str:
        settings = page_settings(**{"prompt": "KING.", "max_new_tokens": 20, **change})
        return json.dumps({"data": [getattr(settings, name) for name in PUBLISHED]})
    return body


def test_step_and_race_take_the_page_settings_in_their_published_order():
    """The API the wired handlers publish: PageSettings' fields, the published ones first in their order (a new
    setting goes last), and the race the same without the notation."""
    from specviz.app.wiring import build_app
    from specviz.present.page_settings import RACE_PARAMETERS, STEP_PARAMETERS

    endpoints = build_app().get_api_info()["named_endpoints"]
    step = [p["parameter_name"] for p in endpoints["/step"]["parameters"]]
    race = [p["parameter_name"] for p in endpoints["/race"]["parameters"]]
    assert PUBLISHED[:3] == ("notation", "preset", "prompt") and len(PUBLISHED) >= 15  # the docs were read
    assert tuple(step) == STEP_PARAMETERS and tuple(step[:len(PUBLISHED)]) == PUBLISHED
    assert tuple(race) == RACE_PARAMETERS == tuple(name for name in step if name != "notation")
    assert all(p["parameter_has_default"] for p in endpoints["/step"]["parameters"])  # predict() steps on defaults


MESSAGE = 9  # /step's outputs: text, card, counters, narration, 3 plots, history, viewed step, message, ...


def message_of(outputs, raw: bool = True) -> str:
    """The message output as text; a raw call's outputs start with the session (null) that clients drop."""
    if not isinstance(outputs, (list, tuple)):
        return str(outputs)
    return html.unescape(re.sub(r"<[^>]+>", "", outputs[MESSAGE + raw] or ""))


# ------------------------------------------------------------------ runs outlive anonymous traffic


@pytest.mark.slow  # a load test: a flood of raw calls at a server
def test_a_flood_of_anonymous_calls_leaves_a_visitors_run_intact(served):
    """A visitor steps 4 times; 3x the session capacity of raw /call/reset calls follow (each a session
    of its own); the visitor's next Step is Step 5 and gradio still holds at most CAPACITY sessions."""
    from gradio_client import Client

    demo, url = served
    visitor = Client(url, verbose=False)
    for _ in range(4):
        visitor.predict(api_name="/step")
    for _ in range(FLOOD):
        assert call(url, "reset", '{"data": ["leviathan"]}')[0] == "complete"
    assert len(demo.state_holder.session_data) <= CAPACITY
    out = visitor.predict(api_name="/step")
    assert "Step 5" in out[1], re.sub(r"<[^>]+>", " ", out[1])[:300]
    visitor.close()


def test_an_expired_run_says_so_at_the_next_step(served):
    """gradio frees a session's state once its time_to_live passed (checked each second); the next
    Step says the earlier run was freed and starts afresh, rather than silently showing Step 1."""
    from gradio_client import Client

    demo, url = served
    state = next(b for b in demo.blocks.values() if type(b).__name__ == "State")
    ttl, state.time_to_live = state.time_to_live, 1
    try:
        visitor = Client(url, verbose=False)
        visitor.predict(api_name="/step")
        visitor.predict(api_name="/step")
        time.sleep(3)
        out = visitor.predict(api_name="/step")
    finally:
        state.time_to_live = ttl
    assert "Step 1" in out[1] and "no event for 15 minutes and was freed" in message_of(out, raw=False)
    visitor.close()


# ------------------------------------------------------------------ the disk stays bounded


def test_a_client_holds_one_export_at_a_time_and_none_once_it_goes(served, tmp_path):
    from gradio_client import Client

    demo, url = served
    cache = Path(demo.GRADIO_CACHE)
    before = set(cache.glob("specviz-*"))
    files_before = set(cache.rglob("specviz-traces.jsonl"))
    client = Client(url, verbose=False, download_files=str(tmp_path))  # the client's copies go elsewhere
    for _ in range(3):
        client.predict(api_name="/step")
        json_file, csv_file, _ = client.predict(api_name="/traces")
    mine = set(cache.glob("specviz-*")) - before
    assert len(mine) == 1
    copies = [f for f in cache.rglob("specviz-traces.jsonl") if f not in files_before]
    assert [f.parent for f in copies] == list(mine)  # served from where it was written: gradio made no copy
    size = sum(f.stat().st_size for f in next(iter(mine)).iterdir())
    assert 0 < size < 200_000  # 3 steps; a 200-token run's export measured ~0.33 MB
    demo.state_holder.delete_state(client.session_hash)  # what expiry, eviction and a closed tab do
    assert not (set(cache.glob("specviz-*")) - before)
    client.close()


def test_gradios_cache_sweep_is_on_and_removes_uploads(served):
    """Uploads (capped at 1 MB) land in gradio's cache and its delete_cache sweep removes them."""
    from gradio.route_utils import delete_files_created_by_app

    from specviz.app.wiring import CACHE_SWEEP

    demo, url = served
    assert demo.delete_cache == CACHE_SWEEP
    r = httpx.post(f"{url}gradio_api/upload", files={"files": ("x.txt", b"hello" * 100)}, timeout=30)
    assert r.status_code == 200, r.text
    uploaded = Path(r.json()[0])
    assert uploaded.exists()
    delete_files_created_by_app(demo, age=0)
    assert not uploaded.exists()


# ------------------------------------------------------------------ every bad value named


@pytest.mark.parametrize("change, named", [
    ({"gamma": "abc"}, "gamma"), ({"gamma": None}, "gamma"), ({"gamma": 2.5}, "gamma"), ({"gamma": 99}, "gamma"),
    ({"seed": "abc"}, "seed"), ({"seed": 2.5}, "seed"), ({"seed": 3.7}, "seed"), ({"seed": -1}, "seed"),
    ({"top_k": 2.5}, "top_k"), ({"temperature": "hot"}, "temperature"), ({"top_p": 0}, "top_p"),
    ({"kl_budget": -1}, "kl_budget"), ({"max_new_tokens": 500}, "max_new_tokens"), ({"notation": None}, "notation"),
    ({"notation": "klingon"}, "notation"), ({"preset": "nope"}, "preset"), ({"prompt": 5}, "prompt"),
    ({"draft_model": 7, "target_model": "x"}, "draft_model")])
def test_bad_step_values_are_messages_naming_the_setting(served, step_body, change, named):
    event, outputs = call(served[1], "step", step_body(**change))
    assert event == "complete", outputs
    assert named in message_of(outputs), message_of(outputs)
    assert "Step 1" not in outputs[2]  # nothing stepped


@pytest.mark.parametrize("value", [[1], {"a": 1}], ids=["list", "dict"])
@pytest.mark.parametrize("name", PUBLISHED)
def test_a_list_or_dict_for_any_step_parameter_is_a_message_naming_it(served, step_body, name, value):
    event, outputs = call(served[1], "step", step_body(**{name: value}))
    assert event == "complete", outputs
    assert name in message_of(outputs) and "upstream" not in message_of(outputs), message_of(outputs)
    assert "Step 1" not in outputs[2]  # nothing stepped


@pytest.mark.parametrize("body, named", [('"seed": NaN', "seed"), ('"top_k": Infinity', "top_k")])
def test_non_finite_json_numbers_are_named_too(served, step_body, body, named):
    """NaN and Infinity as JSON tokens (Python's json writes them), not strings."""
    values = json.loads(step_body())["data"]
    key, token = body.split(": ")
    values[PUBLISHED.index(key.strip('"'))] = "__TOKEN__"
    text = json.dumps({"data": values}).replace('"__TOKEN__"', token)
    event, outputs = call(served[1], "step", text)
    assert event == "complete" and named in message_of(outputs), outputs


@pytest.mark.parametrize("data, named", [
    ([[1e308, 1e308], [1, 1], 1000, "exact", 0], None), ([[1, 1], [1, 1], 1000, "exact", None], "seed"),
    ([[1, 1], [1, 1], 1000, "exact", 2**70], "seed"), ([[1, 1], [1, 1], 1000, "exact", 2.5], "seed"),
    ([[1, 1], [1, 1], 10**7, "exact", 0], "samples"), ([[1, 1], [1, 1], 1000, "nope", 0], "variant")])
def test_bad_playground_values_are_messages_naming_the_setting(served, data, named):
    event, outputs = call(served[1], "playground", json.dumps({"data": data}))
    if named is None:
        assert event == "complete" and outputs[0]["counts"] and sum(outputs[0]["counts"]) == 1000
    else:
        assert event == "error" and named in outputs and "upstream" not in outputs, outputs


@pytest.mark.parametrize("token, named", [("Infinity", "seed"), ("NaN", "seed")])
def test_non_finite_playground_values_are_named(served, token, named):
    body = json.dumps({"data": [[1, 1], [1, 1], 1000, "exact", "__T__"]}).replace('"__T__"', token)
    event, outputs = call(served[1], "playground", body)
    assert event == "error" and named in outputs, outputs


# ------------------------------------------------------------------ no memory address or bad text leaks


def test_config_shows_no_memory_address(served):
    text = httpx.get(f"{served[1]}config", timeout=30).text
    assert "delete_callback" in text and not re.search(r" at 0x[0-9a-f]+", text)


def test_a_lone_surrogate_becomes_u_fffd(served, step_body):
    event, outputs = call(served[1], "step", step_body(prompt="KING.\ud800 Now"))
    timeline = html.unescape(outputs[1])  # a raw call's outputs: the session (null), then the text
    assert event == "complete" and "KING.\ufffd Now" in timeline and "KING.? Now" not in timeline


# ------------------------------------------------------------------ the page offers only what the deployment does


def test_the_page_offers_only_the_deployments_presets(monkeypatch):
    from specviz.app.wiring import build_app

    monkeypatch.setenv("SPACE_ID", "someone/specviz")
    monkeypatch.setenv("SPECVIZ_PRESETS", "gpt2")
    demo = build_app()
    dropdown = next(b for b in demo.blocks.values() if getattr(b, "elem_id", None) == "preset")
    assert [value for _, value in dropdown.choices] == ["shakespeare", "gpt2"]


def test_the_pages_integer_fields_do_not_round_what_is_typed():
    """gr.Number(precision=0) rounded 2.5 to 2 before DecodeConfig saw it; the fields keep what is typed
    and the model-bound events hand the values over unprocessed, so 2.5 is refused by name."""
    from specviz.app.wiring import build_app

    demo = build_app()
    by_id = {getattr(b, "elem_id", None): b for b in demo.blocks.values()}
    for elem_id in ("seed", "top-k", "view-step", "pg-seed"):
        assert by_id[elem_id].precision is None, elem_id
    step = next(fn for fn in demo.fns.values() if fn.api_name == "step")
    assert step.preprocess is False


def test_a_session_in_an_event_is_not_freed_under_it(page_settings, pair):
    """gradio's expiry loop may fire while the session steps (its lock held): the run stays, since
    gradio stores the session back when the event ends; once idle it is freed and its client noted."""
    from specviz.app.handlers import FREED, release_session, step_handler
    from specviz.present.views import Session

    session = Session()
    session.owner = "client-under-test"
    step_handler(session, page_settings(prompt="KING.", max_new_tokens=20))
    with session.lock:
        release_session(session)
    assert session.run is not None and len(session.traces) == 1
    release_session(session)
    assert session.run is None and FREED.pop("client-under-test")


@pytest.mark.parametrize("name", ["SPECVIZ_DRAFT_BF16", "SPECVIZ_CUDA_GRAPHS", "SPECVIZ_MAX_PAIRS"])
def test_a_bad_deployment_variable_stops_the_server_with_one_line_naming_it(name):
    import os
    import subprocess
    import sys

    env = {**os.environ, name: "half", "GRADIO_SERVER_PORT": "7899"}
    out = subprocess.run([sys.executable, "app.py"], capture_output=True, text=True, timeout=120, env=env, check=False)
    lines = out.stderr.strip().splitlines()
    assert out.returncode == 2 and len(lines) == 1 and lines[0].startswith(f"error: {name} must be"), out.stderr[-500:]
