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
