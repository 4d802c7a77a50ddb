"""gradio internals that app/gradio_internals.py relies on: fails loudly when an upgrade moves them."""
import gradio as gr

from specviz.app import gradio_internals


def test_the_pinned_gradio_is_the_one_installed():
    assert gr.__version__ == gradio_internals.CHECKED_AGAINST, (
        f"gradio {gr.__version__} is installed but app/gradio_internals.py was checked against "
        f"{gradio_internals.CHECKED_AGAINST}: re-read gradio's StateHolder and update it")


def test_state_holder_has_what_forget_tab_uses():
    with gr.Blocks() as demo:
        gr.State(0)
    holder = demo.state_holder
    for name in ("delete_state", "lock", "session_data", "time_last_used"):
        assert hasattr(holder, name), f"gradio's StateHolder lost {name!r}"
    assert isinstance(holder.session_data, dict) and isinstance(holder.time_last_used, dict)


def holder_for(capacity: int, freed: list):
    """A StateHolder as a launched app makes it (gradio.routes.App does the same two calls)."""
    from gradio.state_holder import StateHolder

    with gr.Blocks() as demo:
        state = gr.State(None, delete_callback=freed.append)
    demo.state_session_capacity = capacity
    StateHolder().set_blocks(demo)
    return demo, state


def test_state_holder_has_what_protect_sessions_uses():
    demo, state = holder_for(3, [])
    holder = demo.state_holder
    for name in ("update", "capacity", "lock", "session_data", "time_last_used"):
        assert hasattr(holder, name), f"gradio's StateHolder lost {name!r}"
    session = holder["a"]
    session[state._id] = "x"
    assert holder.capacity == 3 and list(session.state_data.values()) == ["x"]
    assert [(c, v) for c, v, _ in session.state_components] == [(state, "x")]
    assert isinstance(gradio_internals.cache_dir(demo), str)


def test_a_flood_of_worthless_sessions_evicts_only_worthless_ones_and_frees_them():
    """Capacity 3: one session worth keeping, then 10 new ones (as 10 raw API calls make): the kept one
    stays, at most 3 are held, and each evicted session's state went through its delete_callback."""
    freed = []
    demo, state = holder_for(3, freed)
    holder = demo.state_holder
    gradio_internals.protect_sessions(demo, lambda values: 2 if "precious" in values else 0)
    holder["visitor"][state._id] = "precious"
    for i in range(10):
        holder[f"anon-{i}"][state._id] = f"cheap-{i}"
    assert "visitor" in holder.session_data and len(holder.session_data) <= 3
    assert freed == [f"cheap-{i}" for i in range(8)] and "precious" not in freed
def test_gradio_core_module_still_exports_change_locale():
    """page.js moves gradio's label language (#lang) through changeLocale, exported by the frontend's core-*.js."""
    from pathlib import Path

    assets = Path(gr.__file__).parent / "templates" / "frontend" / "assets"
    cores = [p for p in assets.glob("core-*.js") if "changeLocale" in p.read_text(encoding="utf-8", errors="ignore")]
    assert cores, "gradio's frontend no longer exports changeLocale from core-*.js: see page.js step 1"
